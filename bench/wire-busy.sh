#!/usr/bin/env bash
# One-way delay of UDP traffic between two hosts through `dualbench wire --both
# delay=10ms` while BUSY processes spin at normal priority, IPv4 and IPv6: what the wire's
# real-time spinning leaves the hosts' own sender and receiver when the machine is busy.
# `dualbench traffic` sends RATE (2,000) messages/s of 512 bytes per family for 5 s; the sink's
# figures are printed. Usage (root):
#   bench/wire-busy.sh [BUSY] [DUALBENCH_BINARY] [MESSAGES_PER_S_PER_FAMILY]
source "$(dirname "$0")/wire-topo.sh"
BUSY="${1:-4}"; DUALBENCH="${2:-$DUALBENCH}"; RATE="${3:-2000}"
[ -n "${2:-}" ] || (cd "$ROOT" && cargo build --release -q -p dualbench)
topo_up off
OUT="$(mktemp -d)"
trap 'topo_down; rm -rf "$OUT"' EXIT
wire_start "$OUT/wire.json" --both delay=10ms
cat >"$OUT/flows.mgn" <<M
0.0 ON 1 UDP DST 198.18.0.2/5000 PERIODIC [$RATE 512]
0.0 ON 2 UDP DST 2001:2::2/5000 PERIODIC [$RATE 512]
5.0 OFF 1
5.0 OFF 2
M
ip netns exec "$NS_B" "$DUALBENCH" traffic sink --listen 198.18.0.2:5000 '[2001:2::2]:5000' \
  --duration 30 -o "$OUT/sink.json" 2>/dev/null &
SINK=$!
sleep 0.5
busy=()
for _ in $(seq "$BUSY"); do timeout 8 sh -c 'while :; do :; done' & busy+=($!); done
ip netns exec "$NS_A" "$DUALBENCH" traffic send "$OUT/flows.mgn" -o "$OUT/send.json" >/dev/null
sleep 0.5
kill -INT "$SINK"; wait "$SINK" || true
for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
python3 - "$OUT/sink.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))["families"]
for fam in ("ipv4", "ipv6"):
    dl = d[fam]["delay_us"]
    print(f"{fam}: one-way delay p50 {dl['p50']/1000:.2f} ms, p99 {dl['p99']/1000:.2f} ms, "
          f"p99.9 {dl['p999']/1000:.2f} ms, max {dl['max']/1000:.2f} ms")
P
