#!/usr/bin/env bash
# A preset through a rate-limited link between two network namespaces: the mix the sink
# measures per class next to the target. A stand-in for the testbed (until `dualbench
# testbed` can host it): client ns --veth--> server ns, tbf on the client side.
# Usage (root): bench/traffic-bottleneck.sh [PRESET] [SECONDS] [LINK_RATE]   (defaults C1B 20 100mbit)
# tbf counts Ethernet frames without preamble/FCS/gap (IP bytes + 14). Addresses come from
# 198.18.0.0/15 and 2001:2::/48 only.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(realpath "${DUALBENCH_BIN:-target/release/dualbench}")"
preset="${1:-C1B}"; secs="${2:-20}"; link="${3:-100mbit}"
id="tb$$"; c="$id-c"; s="$id-s"
dir="$(mktemp -d /tmp/dualbench-traffic-bottleneck.XXXXXX)"
cleanup() {
  [ -n "${sink:-}" ] && kill -TERM "$sink" 2>/dev/null || true
  ip netns del "$c" 2>/dev/null || true
  ip netns del "$s" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$c"; ip netns add "$s"
ip link add "${id}c" netns "$c" type veth peer name "${id}s" netns "$s"
for ns in "$c" "$s"; do ip -n "$ns" link set lo up; done
ip -n "$c" addr add 198.18.100.1/24 dev "${id}c"
ip -n "$s" addr add 198.18.100.2/24 dev "${id}s"
ip -n "$c" addr add 2001:2:0:100::1/64 dev "${id}c" nodad
ip -n "$s" addr add 2001:2:0:100::2/64 dev "${id}s" nodad
ip -n "$c" link set "${id}c" up; ip -n "$s" link set "${id}s" up
for pair in "$c ${id}c" "$s ${id}s"; do set -- $pair; ip netns exec "$1" ethtool -K "$2" tso off gso off gro off >/dev/null 2>&1 || true; done
ip netns exec "$c" tc qdisc add dev "${id}c" root tbf rate "$link" burst 16kb latency 50ms
sleep 1

ip netns exec "$s" "$bin" traffic sink --listen 198.18.100.2:5000 '[2001:2:0:100::2]:5000' \
  --duration $((secs + 60)) -o "$dir/sink.json" 2>"$dir/sink.err" &
sink=$!
for _ in $(seq 50); do grep -q "listening on" "$dir/sink.err" 2>/dev/null && break; sleep 0.1; done
ip netns exec "$c" "$bin" traffic send "$preset" --dst4 198.18.100.2/5000 --dst6 2001:2:0:100::2/5000 \
  --duration "$secs" ${DUALBENCH_FLAGS:-} -o "$dir/send.json" 2>/dev/null
sleep 1; kill -TERM "$sink"; wait "$sink" || true; sink=""
ip netns exec "$c" tc -s qdisc show dev "${id}c" | sed -n 's/^ *Sent/tbf: Sent/p'
python3 - "$dir/send.json" "$dir/sink.json" "$preset" "$link" <<'PY'
import json, sys
send, sink = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
target = {"C1B": (45, 45, 5, 5), "C2B": (22.5, 67.5, 2.5, 7.5), "C3B": (67.5, 22.5, 7.5, 2.5)}
target.update({"C4B": target["C1B"], "C5B": target["C2B"], "C6B": target["C3B"]})
t = target[sys.argv[3].upper()]
print(f"{sys.argv[3]} through a {sys.argv[4]} tbf link: sent {send['total']['sent']}, received {sink['total']['messages']}, "
      f"UDP lost {sum(c['loss']['lost'] for k, c in sink['classes'].items() if k.startswith('udp'))}")
print(f"{'class':7} {'sent':>7} {'received':>8} {'ip_Mbit':>9} {'ip_share':>9} {'target':>7} {'off_%':>7} {'delay_p50_ms':>12} {'delay_p99_ms':>12}")
for i, c in enumerate(("tcp_v4", "tcp_v6", "udp_v4", "udp_v6")):
    k, s = sink["classes"][c], send["classes"][c]
    share = k["share"]["ip"]; want = t[i] / 100
    d = k["delay_us"]
    print(f"{c:7} {s['sent']:7d} {k['messages']:8d} {k['rate_bps']['ip']/1e6:9.3f} {share:9.4f} {want:7.4f} "
          f"{100*(share-want)/want:7.2f} {d['p50']/1e3:12.3f} {d['p99']/1e3:12.3f}")
print(f"total ip Mbit/s at the sink: {sink['total']['rate_bps']['ip']/1e6:.3f}")
PY
