#!/usr/bin/env bash
# Sourced by the wire benchmarks: builds (and on exit removes) three namespaces
#   A (wa0, 198.18.0.1/24, 2001:2::1/64) — W (wwa, wwb: dualbench wire) — B (wb0, .2, ::2)
# Names carry this shell's pid. Offloads (TSO/GSO/GRO) are turned off on A and B so every
# frame is at most MTU-sized, as the testbed does. Needs root, iproute2 and ethtool.
set -euo pipefail
TAG="wb$$"
NS_A="${TAG}a"; NS_W="${TAG}w"; NS_B="${TAG}b"
WIRE_PID=""

topo_down() {
  [ -n "$WIRE_PID" ] && kill -TERM "$WIRE_PID" 2>/dev/null && wait "$WIRE_PID" 2>/dev/null || true
  for ns in "$NS_A" "$NS_W" "$NS_B"; do ip netns del "$ns" 2>/dev/null || true; done
}
trap topo_down EXIT

topo_up() {
  local offloads="${1:-off}"
  for ns in "$NS_A" "$NS_W" "$NS_B"; do ip netns add "$ns"; done
  ip link add wa0 netns "$NS_A" type veth peer name wwa netns "$NS_W"
  ip link add wb0 netns "$NS_B" type veth peer name wwb netns "$NS_W"
  ip netns exec "$NS_W" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  ip -n "$NS_W" link set wwa up; ip -n "$NS_W" link set wwb up
  local ns dev n
  for pair in "$NS_A wa0 1" "$NS_B wb0 2"; do
    read -r ns dev n <<<"$pair"
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "198.18.0.$n/24" dev "$dev"
    ip -n "$ns" addr add "2001:2::$n/64" dev "$dev" nodad
    ip -n "$ns" link set "$dev" up
    if [ "$offloads" = off ]; then
      ip netns exec "$ns" ethtool -K "$dev" tso off gso off gro off >/dev/null 2>&1 || true
    fi
  done
  ip -n "$NS_W" link set wwa promisc on; ip -n "$NS_W" link set wwb promisc on
}

# wire_start STATS_FILE ARGS... : start dualbench wire in W between wwa and wwb.
wire_start() {
  local stats="$1"; shift
  ip netns exec "$NS_W" "$DUALBENCH" wire --a wwa --b wwb --stats "$stats" "$@" &
  WIRE_PID=$!
  sleep 0.3
}

wire_stop() {
  kill -TERM "$WIRE_PID"; wait "$WIRE_PID" || true; WIRE_PID=""
}
