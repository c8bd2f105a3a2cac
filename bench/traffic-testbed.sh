#!/usr/bin/env bash
# A preset across the 100 Mbit/s bottleneck of bench/traffic-s3.toml (a dualbench testbed):
# sink on bgsink, sender on bgsend, and the mix the sink measured per class next to the
# target. Builds the testbed under a name of its own and removes it at the end.
# Usage (root): bench/traffic-testbed.sh [PRESET] [SECONDS]   (defaults C1B 20)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(realpath "${DUALBENCH_BIN:-target/release/dualbench}")"
preset="${1:-C1B}"; secs="${2:-20}"
name="trs3-$$"
dir="$(mktemp -d /tmp/dualbench-traffic-testbed.XXXXXX)"
cleanup() { "$bin" testbed down --name "$name" >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
"$bin" testbed up bench/traffic-s3.toml --name "$name" >/dev/null
"$bin" testbed exec --name "$name" bgsink -- "$bin" traffic sink --listen 0.0.0.0:5000 '[::]:5000' \
  --duration $((secs + 8)) -o "$dir/sink.json" 2>/dev/null &
sink=$!
sleep 2
"$bin" testbed exec --name "$name" bgsend -- "$bin" traffic send "$preset" \
  --dst4 198.18.5.4/5000 --dst6 2001:2:0:5::4/5000 --duration "$secs" ${DUALBENCH_FLAGS:-} -o "$dir/send.json" 2>/dev/null
wait "$sink"
"$bin" testbed status --name "$name" | grep -i "r1 -> r2" || true
python3 - "$dir/send.json" "$dir/sink.json" "$preset" <<'PY'
import json, sys
send, sink = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
target = {"C1B": (45, 45, 5, 5), "C2B": (22.5, 67.5, 2.5, 7.5), "C3B": (67.5, 22.5, 7.5, 2.5)}
target.update({"C4B": target["C1B"], "C5B": target["C2B"], "C6B": target["C3B"]})
t = target[sys.argv[3].upper()]
print(f"{sys.argv[3]} across the testbed's 100 Mbit/s r1 -> r2 link: sent {send['total']['sent']}, "
      f"received {sink['total']['messages']}")
print(f"{'class':7} {'sent':>7} {'received':>8} {'lost':>5} {'ip_Mbit':>9} {'ip_share':>9} {'target':>7} {'off_%':>7} {'delay_p50_ms':>12} {'delay_p99_ms':>12}")
for i, c in enumerate(("tcp_v4", "tcp_v6", "udp_v4", "udp_v6")):
    k, s = sink["classes"][c], send["classes"][c]
    share = k["share"]["ip"]; want = t[i] / 100
    d = k["delay_us"]
    print(f"{c:7} {s['sent']:7d} {k['messages']:8d} {k['loss']['lost']:5d} {k['rate_bps']['ip']/1e6:9.3f} {share:9.4f} {want:7.4f} "
          f"{100*(share-want)/want:7.2f} {d['p50']/1e3:12.3f} {d['p99']/1e3:12.3f}")
print(f"total ip Mbit/s at the sink: {sink['total']['rate_bps']['ip']/1e6:.3f}")
PY
