#!/usr/bin/env bash
# The same MGEN script through Debian's mgen and through dualbench traffic, over IPv4
# loopback: messages sent and received, achieved payload rate, sender CPU per message.
# Usage: bench/traffic-vs-mgen.sh [RATE_MSGS_PER_S] [SIZE_BYTES] [SECONDS]  (defaults 10000 1000 10)
# Needs: apt-get install mgen; cargo build --release -p dualbench.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${DUALBENCH_BIN:-target/release/dualbench}"
rate="${1:-10000}"; size="${2:-1000}"; secs="${3:-10}"
command -v mgen >/dev/null || { echo "mgen not installed: apt-get install mgen" >&2; exit 1; }
dir="$(mktemp -d /tmp/dualbench-traffic-mgen.XXXXXX)"
trap 'rm -rf "$dir"' EXIT
port=47311
printf '0.0 ON 1 UDP DST 127.0.0.1/%s PERIODIC [%s %s]\n%s OFF 1\n' "$port" "$rate" "$size" "$secs" > "$dir/same.mgn"
cpu() { /usr/bin/time -f '%U %S' -o "$dir/time" "$@"; read -r u s < "$dir/time"; echo "$u $s"; }

# mgen -> mgen receiver (its RECV log is the count).
timeout $((secs + 10)) mgen port "$port" output "$dir/mgen-recv.log" >/dev/null 2>&1 &
recv=$!; sleep 0.5
read -r mu ms < <(cpu mgen input "$dir/same.mgn" nolog)
sleep 0.5; kill -TERM "$recv" 2>/dev/null; wait "$recv" 2>/dev/null || true
mgen_recv=$(grep -c ' RECV ' "$dir/mgen-recv.log" || true)
first=$(grep ' RECV ' "$dir/mgen-recv.log" | head -1 | cut -d' ' -f1); last=$(grep ' RECV ' "$dir/mgen-recv.log" | tail -1 | cut -d' ' -f1)

# dualbench -> dualbench sink.
"$bin" traffic sink --listen 127.0.0.1:$port --duration $((secs + 30)) -o "$dir/sink.json" 2>/dev/null &
sink=$!; sleep 0.5
read -r du ds < <(cpu "$bin" traffic send "$dir/same.mgn" -o "$dir/send.json" 2>/dev/null)
sleep 0.5; kill -TERM "$sink"; wait "$sink" || true

python3 - "$dir/send.json" "$dir/sink.json" "$mgen_recv" "$first" "$last" "$mu" "$ms" "$du" "$ds" "$rate" "$size" "$secs" <<'PY'
import json, sys
send, sink = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
mgen_n, first, last = int(sys.argv[3]), sys.argv[4], sys.argv[5]
mu, ms, du, ds = map(float, sys.argv[6:10])
rate, size, secs = float(sys.argv[10]), float(sys.argv[11]), float(sys.argv[12])
def tod(t):
    h, m, s = t.split(":"); return int(h) * 3600 + int(m) * 60 + float(s)
span = tod(last) - tod(first) if mgen_n > 1 else 0
mgen_rate = (mgen_n - 1) * size * 8 / span if span > 0 else 0
k = send["flows"][0]; r = sink["flows"][0]
print(f"script: 0.0 ON 1 UDP DST 127.0.0.1/PORT PERIODIC [{rate:.0f} {size:.0f}], OFF at {secs:.0f} s; scheduled {rate*secs:.0f}")
print(f"{'tool':10} {'received':>9} {'payload_Mbit':>12} {'cpu_user_s':>10} {'cpu_sys_s':>9} {'cpu_ns/msg':>10}")
print(f"{'mgen':10} {mgen_n:9d} {mgen_rate/1e6:12.3f} {mu:10.2f} {ms:9.2f} {(mu+ms)*1e9/max(mgen_n,1):10.0f}")
print(f"{'dualbench':10} {r['messages']:9d} {r['rate_bps']['payload']/1e6:12.3f} {du:10.2f} {ds:9.2f} {(du+ds)*1e9/max(k['sent'],1):10.0f}")
PY
