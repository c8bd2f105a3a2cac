#!/usr/bin/env bash
# Sourced by the wire benchmarks: builds (and on exit removes) three namespaces
#   A (wa0, 198.18.0.1/24, 2001:2::1/64) — W (wwa, wwb: dualbench wire) — B (wb0, .2, ::2)
# with static neighbour entries (so loss never hits ARP/NDP during a measurement).
# Names carry this shell's pid. Offloads (TSO/GSO/GRO) are turned off on A and B so every
# frame is at most MTU-sized, as the testbed does. Needs root, iproute2 and ethtool.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DUALBENCH="${DUALBENCH:-$ROOT/target/release/dualbench}"
PROBE="${PROBE:-$ROOT/target/release/examples/wire_probe}"
build_tools() {
  (cd "$ROOT" && cargo build --release -q -p dualbench && cargo build --release -q -p dualbench-wire --example wire_probe)
}
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
  ip link add wa0 netns "$NS_A" address 02:00:00:00:00:01 type veth peer name wwa netns "$NS_W"
  ip link add wb0 netns "$NS_B" address 02:00:00:00:00:02 type veth peer name wwb netns "$NS_W"
  ip netns exec "$NS_W" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  ip -n "$NS_W" link set wwa up; ip -n "$NS_W" link set wwb up
  local ns dev n
  local peer
  for pair in "$NS_A wa0 1 2" "$NS_B wb0 2 1"; do
    read -r ns dev n peer <<<"$pair"
    ip -n "$ns" link set lo up
    ip -n "$ns" neigh add "198.18.0.$peer" lladdr "02:00:00:00:00:0$peer" dev "$dev" nud permanent
    ip -n "$ns" neigh add "2001:2::$peer" lladdr "02:00:00:00:00:0$peer" dev "$dev" nud permanent
    ip -n "$ns" addr add "198.18.0.$n/24" dev "$dev"
    ip -n "$ns" addr add "2001:2::$n/64" dev "$dev" nodad
    ip -n "$ns" link set "$dev" up
    if [ "$offloads" = off ]; then
      ip netns exec "$ns" ethtool -K "$dev" tso off gso off gro off >/dev/null 2>&1 || true
    fi
  done
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
