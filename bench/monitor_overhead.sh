#!/usr/bin/env bash
# Monitor overhead: CPU time `dualbench monitor --interval 1s` uses over 60 s, in percent of
# one core, watching this shell by pid; then the same watching every `bash` by name (names
# are looked up in /proc at every sample). The sock_diag dump behind the per-family TCP
# states walks every TCP socket of the namespace, so the cost grows with their number:
# the script prints it.
# Run by hand from the repository root:
#   cargo build --release -p dualbench && bench/monitor_overhead.sh
set -euo pipefail
bin=${DUALBENCH_BIN:-target/release/dualbench}
seconds=${SECONDS_TO_RUN:-60}
ticks=$(getconf CLK_TCK)

measure() {
  local out
  out=$(mktemp /tmp/dualbench-bench-XXXXXX.jsonl)
  "$bin" monitor "$@" --interval 1s --duration "${seconds}s" -o "$out" &
  local monitor=$!
  sleep "$((seconds - 1))"
  # utime + stime (clock ticks) of the monitor just before it ends.
  local stat
  read -r -a stat <"/proc/$monitor/stat"
  wait $monitor
  local cpu
  cpu=$(echo "scale=4; (${stat[13]} + ${stat[14]}) / $ticks" | bc)
  echo "monitor $*: $(wc -l <"$out") samples, CPU ${cpu} s over ${seconds} s = $(echo "scale=3; 100 * $cpu / $seconds" | bc)% of one core"
  echo "  TCP sockets on the host at the end (the per-family socket dump walks them all): $(awk '/^TCP:/ {print $3 " in use, " $7 " in TIME_WAIT"}' /proc/net/sockstat)"
  rm -f "$out"
}

measure --pid $$
measure --name bash
