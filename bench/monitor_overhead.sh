#!/usr/bin/env bash
# Monitor overhead: CPU time `dualbench monitor --interval 1s` uses over 60 s while
# watching one process (itself's parent shell), in percent of one core.
# Run by hand from the repository root:
#   cargo build --release -p dualbench && bench/monitor_overhead.sh
set -euo pipefail
bin=${DUALBENCH_BIN:-target/release/dualbench}
seconds=${SECONDS_TO_RUN:-60}
out=$(mktemp /tmp/dualbench-bench-XXXXXX.jsonl)
"$bin" monitor --pid $$ --interval 1s --duration "${seconds}s" -o "$out" &
monitor=$!
sleep "$((seconds - 1))"
# utime + stime (clock ticks) of the monitor just before it ends.
read -r -a stat <"/proc/$monitor/stat"
ticks=$(getconf CLK_TCK)
wait $monitor
cpu=$(echo "scale=4; (${stat[13]} + ${stat[14]}) / $ticks" | bc)
echo "samples: $(wc -l <"$out"), monitor CPU: ${cpu} s over ${seconds} s = $(echo "scale=3; 100 * $cpu / $seconds" | bc)% of one core"
rm -f "$out"
