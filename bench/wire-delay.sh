#!/usr/bin/env bash
# Added one-way delay of `dualbench wire --both delay=10ms`, IPv4 and IPv6, measured with
# the UDP probe (true one-way delay: sender and receiver read the same CLOCK_MONOTONIC)
# and with ping / ping -6 (RTT, two crossings). The baseline is the same path through a
# transparent wire, so "extra" is what the emulated delay adds. Probe and ping run under
# SCHED_FIFO 40 (the wire under its default 50) so a busy machine's scheduler does not
# hide the wire's own accuracy. Usage (root):
#   bench/wire-delay.sh [SPIN_US] [COUNT]
source "$(dirname "$0")/wire-topo.sh"
SPIN="${1:-200}"; COUNT="${2:-2000}"
build_tools
topo_up off

probe() { # probe TARGET -> "p50 p99" in µs
  chrt -f 40 "$PROBE" "$NS_A" "$NS_B" "$1" "$COUNT" 1000 | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["p50_us"], r["p99_us"], r["received"])'
}
ping_rtt() { # ping_rtt FLAG ADDR -> "p50 p99" in µs
  ip netns exec "$NS_A" chrt -f 40 ping $1 -n -c "$((COUNT / 4))" -i 0.004 "$2" |
    sed -n 's/.*time=\([0-9.]*\) ms/\1/p' | sort -n |
    awk '{v[NR]=$1} END {i50=int(NR*0.5+0.5); i99=int(NR*0.99+0.5); printf "%.1f %.1f %d\n", v[i50]*1000, v[i99]*1000, NR}'
}

declare -A base
for mode in base delay; do
  if [ "$mode" = base ]; then wire_start /tmp/$TAG-base.json --seed 1 --spin-us "$SPIN"
  else wire_start /tmp/$TAG-delay.json --both delay=10ms --seed 1 --spin-us "$SPIN"; fi
  for fam in v4 v6; do
    if [ $fam = v4 ]; then t="198.18.0.2:7100"; a=198.18.0.2; f=""; else t="[2001:2::2]:7100"; a=2001:2::2; f="-6"; fi
    read -r p50 p99 n <<<"$(probe "$t")"
    read -r r50 r99 rn <<<"$(ping_rtt "$f" "$a")"
    if [ $mode = base ]; then
      base[$fam]="$p50 $r50"
      printf '%-6s baseline   udp one-way p50 %8.1f us p99 %8.1f us (%d) | ping rtt p50 %8.1f us p99 %8.1f us (%d)\n' $fam "$p50" "$p99" "$n" "$r50" "$r99" "$rn"
    else
      read -r b50 br50 <<<"${base[$fam]}"
      python3 - "$fam" "$p50" "$p99" "$n" "$b50" "$r50" "$r99" "$rn" "$br50" <<'PY'
import sys
fam, p50, p99, n, b50, r50, r99, rn, br50 = sys.argv[1:]
p50, p99, b50, r50, r99, br50 = map(float, (p50, p99, b50, r50, r99, br50))
print(f"{fam:6} delay=10ms udp one-way p50 {p50:8.1f} us p99 {p99:8.1f} us ({n}) | extra p50 {p50-b50:8.1f} us (error {p50-b50-10000:+6.1f}) extra p99 {p99-b50:8.1f} us (error {p99-b50-10000:+6.1f})")
print(f"{fam:6} delay=10ms ping rtt    p50 {r50:8.1f} us p99 {r99:8.1f} us ({rn}) | extra p50 {r50-br50:8.1f} us (error {r50-br50-20000:+6.1f}) extra p99 {r99-br50:8.1f} us (error {r99-br50-20000:+6.1f})")
PY
    fi
  done
  wire_stop
  python3 - /tmp/$TAG-$mode.json "$mode" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for k, d in r["directions"].items():
    print(f"       wire stats {sys.argv[2]:5} {k}: frames {d['packets_out']}, added delay measured inside the wire p50 {d['delay_us']['p50']:.1f} us p99 {d['delay_us']['p99']:.1f} us")
PY
  rm -f /tmp/$TAG-$mode.json
done
