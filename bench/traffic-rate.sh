#!/usr/bin/env bash
# UDP PERIODIC rate accuracy and send-time jitter over loopback, IPv4 and IPv6.
# Usage: bench/traffic-rate.sh [RATE_MSGS_PER_S] [SIZE_BYTES] [SECONDS]   (defaults 10000 1000 10)
# DUALBENCH_FLAGS adds sender flags, e.g. "--realtime 10". Needs a release build:
# cargo build --release -p dualbench. Prints one line per family.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${DUALBENCH_BIN:-target/release/dualbench}"
rate="${1:-10000}"; size="${2:-1000}"; secs="${3:-10}"
dir="$(mktemp -d /tmp/dualbench-traffic-rate.XXXXXX)"
trap 'rm -rf "$dir"' EXIT

printf '%-5s %9s %9s %12s %12s %8s %9s %9s %9s %10s\n' family scheduled received payload_Mbit ip_Mbit err_% lost late_p50 late_p99 cpu_ns/msg
for fam in 4 6; do
  if [ "$fam" = 4 ]; then listen=127.0.0.1:0; else listen='[::1]:0'; fi
  "$bin" traffic sink --listen "$listen" --duration $((secs + 30)) -o "$dir/sink$fam.json" 2>"$dir/sink$fam.err" &
  sink=$!
  for _ in $(seq 50); do grep -q "listening on" "$dir/sink$fam.err" 2>/dev/null && break; sleep 0.1; done
  addr="$(sed -n 's/.*listening on //p' "$dir/sink$fam.err")"
  host="${addr%:*}"; host="${host#[}"; host="${host%]}"; port="${addr##*:}"
  printf '0.0 ON 1 UDP DST %s/%s PERIODIC [%s %s]\n%s OFF 1\n' "$host" "$port" "$rate" "$size" "$secs" > "$dir/rate.mgn"
  "$bin" traffic send "$dir/rate.mgn" ${DUALBENCH_FLAGS:-} -o "$dir/send$fam.json" 2>/dev/null
  sleep 0.5
  kill -TERM "$sink"; wait "$sink" || true
  python3 - "$dir/send$fam.json" "$dir/sink$fam.json" "$fam" "$rate" "$size" <<'PY'
import json, sys
send, sink = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
fam, rate, size = sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
f, k = send["flows"][0], sink["flows"][0]
want = rate * size * 8
got = k["rate_bps"]["payload"]
print(f"IPv{fam:<3} {f['scheduled']:9d} {k['messages']:9d} {got/1e6:12.3f} {k['rate_bps']['ip']/1e6:12.3f} "
      f"{100*(got-want)/want:8.3f} {k['loss']['lost']:9d} {f['lateness_us']['p50']:8.1f}us {f['lateness_us']['p99']:8.1f}us "
      f"{send['generator']['cpu_ns_per_message']:10.0f}")
PY
done
