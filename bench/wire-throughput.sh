#!/usr/bin/env bash
# TCP throughput through `dualbench wire` with 1500-byte frames (MTU 1500, TSO/GSO/GRO off
# on both hosts), IPv4 and IPv6, at 0 ms and at 20 ms added delay each way (40 ms RTT),
# with iperf3 (Debian package) from A to B for SECONDS; TCP buffers may grow to 32 MB on
# both hosts so the window is not the limit. Usage (root):
#   bench/wire-throughput.sh [SPIN_US] [SECONDS]
# WIRE_SPECS="spec1;spec2" replaces the two link specs ("" = no shaping).
source "$(dirname "$0")/wire-topo.sh"
SPIN="${1:-200}"; SECS="${2:-10}"
build_tools
topo_up off
# Room for a 40 ms RTT at over 1 Gbit/s (the default 6 MB limit caps a window near 600 Mbit/s).
for ns in "$NS_A" "$NS_B"; do
  ip netns exec "$ns" sysctl -qw net.ipv4.tcp_rmem="4096 131072 33554432" net.ipv4.tcp_wmem="4096 16384 33554432"
done

IFS=';' read -r -a SPECS <<<"${WIRE_SPECS:-;delay=20ms}"
for spec in "${SPECS[@]}"; do
  wire_start /tmp/$TAG-tp.json ${spec:+--both "$spec"} --seed 1 --spin-us "$SPIN" ${WIRE_ARGS:-}
  for fam in v4 v6; do
    if [ $fam = v4 ]; then addr=198.18.0.2; else addr=2001:2::2; fi
    ip netns exec "$NS_B" iperf3 -s -1 -B "$addr" >/dev/null 2>&1 &
    server=$!
    sleep 0.5
    mbit=$(ip netns exec "$NS_A" iperf3 -c "$addr" -t "$SECS" -J |
      python3 -c 'import json,sys; e=json.load(sys.stdin)["end"]; print("%.0f %d" % (e["sum_received"]["bits_per_second"]/1e6, e["sum_sent"].get("retransmits", 0)))')
    wait "$server" || true
    read -r rate retr <<<"$mbit"
    printf '%-4s %-12s %6s Mbit/s received (retransmits %s)\n' "$fam" "${spec:-no-shaping}" "$rate" "$retr"
  done
  wire_stop
  python3 - /tmp/$TAG-tp.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for k, d in r["directions"].items():
    print(f"     wire {k}: frames in {d['packets_in']} out {d['packets_out']}, kernel drops {d['dropped_kernel']}, "
          f"queue drops {d['dropped_queue']}, oversize {d['dropped_oversize']}, send errors {d['send_errors']}, "
          f"added delay p50 {d['delay_us']['p50']:.1f} us p99 {d['delay_us']['p99']:.1f} us")
PY
  rm -f /tmp/$TAG-tp.json
done
