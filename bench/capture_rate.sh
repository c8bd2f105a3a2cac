#!/usr/bin/env bash
# Capture rate: `dualbench capture` on loopback while iperf3 sends small UDP datagrams
# as fast as it can for 10 s; prints packets per second written and the kernel's drops.
# Run by hand, as root, from the repository root:
#   cargo build --release -p dualbench && bench/capture_rate.sh
set -euo pipefail
bin=${DUALBENCH_BIN:-target/release/dualbench}
seconds=${SECONDS_TO_RUN:-10}
dir=$(mktemp -d /tmp/dualbench-bench-XXXXXX)
port=$((20000 + $$ % 20000))

iperf3 -s -1 -p $port -B 127.0.0.1 >"$dir/iperf-server.out" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$dir"' EXIT
sleep 0.5
"$bin" capture --iface lo --port $port -w "$dir/rate.pcap" --duration $((seconds + 2)) --snaplen 128 --json >"$dir/stats.json" 2>"$dir/capture.err" &
capture=$!
sleep 0.5
iperf3 -c 127.0.0.1 -p $port -u -b 0 -l 64 -P "${STREAMS:-4}" -t "$seconds" >"$dir/iperf-client.out"
wait $capture
tail -1 "$dir/capture.err"
packets=$(grep '"packets"' "$dir/stats.json" | tr -dc 0-9)
drops=$(grep '"kernel_drops"' "$dir/stats.json" | tr -dc 0-9)
echo "iperf3: $(grep -E "SUM.*(receiver|sender)" "$dir/iperf-client.out" | tail -1)"
echo "captured ${packets} packets in ${seconds} s of traffic: $((packets / seconds)) packets/s; kernel drops: ${drops}"
