#!/usr/bin/env bash
# The same MGEN script through Debian's mgen and through dualbench traffic, over loopback,
# IPv4 and IPv6: messages received, achieved payload rate, sender CPU per message.
# Usage: bench/traffic-vs-mgen.sh [RATE_MSGS_PER_S] [SIZE_BYTES] [SECONDS]  (defaults 10000 1000 10)
# Receivers: dualbench's sink counts every sender's datagrams (mgen's as "foreign");
# mgen's own receiver is also run for IPv4 (mgen 5.02b in Debian 12 does not receive IPv6).
# Needs: apt-get install mgen; cargo build --release -p dualbench.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${DUALBENCH_BIN:-target/release/dualbench}"
rate="${1:-10000}"; size="${2:-1000}"; secs="${3:-10}"
command -v mgen >/dev/null || { echo "mgen not installed: apt-get install mgen" >&2; exit 1; }
dir="$(mktemp -d /tmp/dualbench-traffic-mgen.XXXXXX)"
trap 'rm -rf "$dir"' EXIT
port=47311

# Run a sender under /usr/bin/time; prints "user sys".
cpu() { /usr/bin/time -f '%U %S' -o "$dir/time" "$@" >/dev/null 2>&1; cat "$dir/time"; }
sink_start() { "$bin" traffic sink --listen "$1" --duration $((secs + 30)) -o "$dir/sink.json" 2>/dev/null & sink=$!; sleep 0.5; }
sink_stop() { sleep 0.5; kill -TERM "$sink"; wait "$sink" || true; }
# Print a result row: tool family received payload_Mbit user sys sent
row() { python3 -c '
import sys
tool, fam, n, mbit, u, s, sent = sys.argv[1:8]
n, u, s, sent = int(n), float(u), float(s), max(int(sent), 1)
print(f"{tool:24} {fam:5} {n:9d} {float(mbit):12.3f} {u:10.2f} {s:9.2f} {(u+s)*1e9/sent:10.0f}")' "$@"; }
json() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }

echo "script: 0.0 ON 1 UDP DST <addr>/$port PERIODIC [$rate $size]; $secs OFF 1  (scheduled $((rate * secs)))"
printf '%-24s %-5s %9s %12s %10s %9s %10s\n' tool family received payload_Mbit cpu_user_s cpu_sys_s cpu_ns/msg
for fam in 4 6; do
  if [ "$fam" = 4 ]; then addr=127.0.0.1; listen=127.0.0.1:$port; else addr=::1; listen="[::1]:$port"; fi
  printf '0.0 ON 1 UDP DST %s/%s PERIODIC [%s %s]\n%s OFF 1\n' "$addr" "$port" "$rate" "$size" "$secs" > "$dir/same.mgn"
  ipv=""; [ "$fam" = 6 ] && ipv=ipv6

  # mgen -> dualbench sink: the sink counts mgen's datagrams as foreign.
  sink_start "$listen"
  read -r mu ms < <(cpu mgen $ipv input "$dir/same.mgn" nolog)
  sink_stop
  n=$(json "$dir/sink.json" "d['foreign']")
  row "mgen -> sink" "IPv$fam" "$n" "$(python3 -c "print($n*$size*8/$secs/1e6)")" "$mu" "$ms" "$n"

  if [ "$fam" = 4 ]; then  # mgen -> mgen receiver, rate from its RECV timestamps.
    timeout $((secs + 10)) mgen port "$port" output "$dir/mgen-recv.log" >/dev/null 2>&1 & recv=$!; sleep 0.5
    read -r mu ms < <(cpu mgen input "$dir/same.mgn" nolog)
    sleep 0.5; kill -TERM "$recv" 2>/dev/null; wait "$recv" 2>/dev/null || true
    mbit=$(awk -v size="$size" '/ RECV /{split($1,t,":"); s=t[1]*3600+t[2]*60+t[3]; if(!n) f=s; l=s; n++}
      END{ if (n > 1) printf "%.6f", (n-1)*size*8/(l-f)/1e6; else print 0 }' "$dir/mgen-recv.log")
    n=$(grep -c ' RECV ' "$dir/mgen-recv.log" || true)
    row "mgen -> mgen" "IPv$fam" "$n" "$mbit" "$mu" "$ms" "$n"
  fi

  for flags in "" "--batch-window 500"; do
    sink_start "$listen"
    read -r du ds < <(cpu "$bin" traffic send "$dir/same.mgn" $flags -o "$dir/send.json")
    sink_stop
    n=$(json "$dir/sink.json" "d['flows'][0]['messages']")
    mbit=$(json "$dir/sink.json" "d['flows'][0]['rate_bps']['payload']/1e6")
    sent=$(json "$dir/send.json" "d['flows'][0]['sent']")
    row "dualbench ${flags:-(default)}" "IPv$fam" "$n" "$mbit" "$du" "$ds" "$sent"
  done
done
