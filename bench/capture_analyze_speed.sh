#!/usr/bin/env bash
# Analysis speed: `dualbench analyze` vs tshark's per-connection summary (`-q -z conv,tcp`)
# on the same 1,000,000-packet capture, one after the other, each pinned to one core.
# The capture is of the built-in server on loopback (IPv4 and IPv6 at 1:1, no keep-alive),
# made with `dualbench capture`. Run by hand, as root, from the repository root:
#   cargo build --release -p dualbench && bench/capture_analyze_speed.sh
set -euo pipefail
bin=${DUALBENCH_BIN:-target/release/dualbench}
packets=${PACKETS:-1000000}
dir=$(mktemp -d /tmp/dualbench-bench-XXXXXX)
port=$((20000 + $$ % 20000))
file=$dir/loopback.pcap

"$bin" serve --listen 127.0.0.1:$port --listen "[::1]:$port" --workers 1 >"$dir/serve.out" &
serve=$!
trap 'kill $serve 2>/dev/null || true' EXIT
sleep 0.5
"$bin" capture --iface lo --port $port -w "$file" --count "$packets" --duration 600 2>"$dir/capture.err" &
capture=$!
sleep 0.5
# About 9 packets per connection: enough requests to reach the packet count; the capture stops at it.
"$bin" run -q -n $((packets / 8)) -c 8 --format json "http://127.0.0.1:$port/" "http://[::1]:$port/" >"$dir/run.json" || true
wait $capture || true
cat "$dir/capture.err"

echo "== dualbench analyze (one core)"
start=$(date +%s.%N)
taskset -c 0 "$bin" analyze --summary-only "$file" >"$dir/analyze.txt"
end=$(date +%s.%N)
ours=$(echo "$end - $start" | bc)
head -1 "$dir/analyze.txt"
echo "dualbench analyze: ${ours} s"

echo "== tshark -q -z conv,tcp (one core)"
start=$(date +%s.%N)
taskset -c 0 tshark -r "$file" -q -z conv,tcp >"$dir/tshark.txt" 2>/dev/null
end=$(date +%s.%N)
theirs=$(echo "$end - $start" | bc)
echo "tshark conversations: $(grep -c '<->' "$dir/tshark.txt")"
echo "tshark: ${theirs} s"
echo "speed-up: $(echo "scale=1; $theirs / $ours" | bc)x"
rm -rf "$dir"
