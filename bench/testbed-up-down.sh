#!/usr/bin/env bash
# How long `dualbench testbed up` and `down` take for a bundled topology (default: the
# 14-namespace congestion.toml), repeated N times. Needs root. Run by hand:
#   bench/testbed-up-down.sh [TOPOLOGY] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
topology=${1:-testbeds/congestion.toml}
runs=${2:-5}
bin=${DUALBENCH_BIN:-target/release/dualbench}
[ -x "$bin" ] || cargo build --release -q -p dualbench
name="bench$$"
state=$(mktemp -d)
trap '"$bin" testbed down --name "$name" --state-dir "$state" >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
for i in $(seq "$runs"); do
  t0=$(date +%s.%N)
  "$bin" testbed up "$topology" --name "$name" --state-dir "$state" >/dev/null
  t1=$(date +%s.%N)
  "$bin" testbed down --name "$name" --state-dir "$state"
  t2=$(date +%s.%N)
  awk -v i="$i" -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "run %d: up %.2fs  down %.2fs\n", i, b - a, c - b }'
done
