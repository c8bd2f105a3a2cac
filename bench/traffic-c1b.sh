#!/usr/bin/env bash
# A preset (default C1B: 75 Mbit/s IP, 45/45/5/5 % TCPv4/TCPv6/UDPv4/UDPv6, 10 flows) over
# loopback for SECONDS, and the mix the sink measured per class, next to the target.
# Usage: bench/traffic-c1b.sh [PRESET] [SECONDS]   (defaults C1B 10)
# Loopback has no bottleneck: this checks the generator, not a congested link.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${DUALBENCH_BIN:-target/release/dualbench}"
preset="${1:-C1B}"; secs="${2:-10}"
dir="$(mktemp -d /tmp/dualbench-traffic-preset.XXXXXX)"
trap 'rm -rf "$dir"' EXIT
"$bin" traffic sink --listen 127.0.0.1:0 '[::1]:0' --duration $((secs + 30)) -o "$dir/sink.json" 2>"$dir/sink.err" &
sink=$!
for _ in $(seq 50); do grep -q "listening on" "$dir/sink.err" 2>/dev/null && break; sleep 0.1; done
read -r a4 a6 < <(sed -n 's/.*listening on //p' "$dir/sink.err")
d4="${a4%:*}/${a4##*:}"; h6="${a6%:*}"; h6="${h6#[}"; d6="${h6%]}/${a6##*:}"
"$bin" traffic send "$preset" --dst4 "$d4" --dst6 "$d6" --duration "$secs" ${DUALBENCH_FLAGS:-} -o "$dir/send.json" 2>/dev/null
sleep 0.5; kill -TERM "$sink"; wait "$sink" || true
python3 - "$dir/send.json" "$dir/sink.json" "$preset" <<'PY'
import json, sys
send, sink = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print(f"{sys.argv[3]}: sent {send['total']['sent']} messages, sink received {sink['total']['messages']}, lost {sink['total']['loss']['lost']}")
print(f"{'class':7} {'flows':>5} {'sent':>7} {'received':>8} {'ip_Mbit':>9} {'ip_share':>9} {'payload_share':>13}")
for c, k in sink["classes"].items():
    s = send["classes"][c]
    print(f"{c:7} {k['flows']:5d} {s['sent']:7d} {k['messages']:8d} {k['rate_bps']['ip']/1e6:9.3f} {k['share']['ip']:9.4f} {k['share']['payload']:13.4f}")
t = sink["total"]
print(f"{'total':7} {t['flows']:5d} {send['total']['sent']:7d} {t['messages']:8d} {t['rate_bps']['ip']/1e6:9.3f}")
PY
