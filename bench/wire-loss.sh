#!/usr/bin/env bash
# Random loss of `dualbench wire --a-to-b loss=1%`: COUNT UDP datagrams (default 100,000)
# per family from A to B with the probe (under SCHED_FIFO 40, receive buffer 8 MB, static
# neighbours, so the wire is the only place frames are lost), compared with 1% and with the
# wire's own dropped_loss counter. Usage (root):  bench/wire-loss.sh [COUNT] [SEED]
source "$(dirname "$0")/wire-topo.sh"
COUNT="${1:-100000}"; SEED="${2:-1}"
build_tools
topo_up off
wire_start /tmp/$TAG-loss.json --a-to-b loss=1% --seed "$SEED"
lost_total=0
for fam in v4 v6; do
  if [ $fam = v4 ]; then t="198.18.0.2:7200"; else t="[2001:2::2]:7200"; fi
  out=$(chrt -f 40 "$PROBE" "$NS_A" "$NS_B" "$t" "$COUNT" 20)
  python3 -c 'import json,sys; r=json.load(sys.stdin); p=r["loss_pct"]; print("%s: sent %d received %d loss %.3f%% (error %+.3f points)" % (sys.argv[1], r["sent"], r["received"], p, p - 1))' "$fam" <<<"$out"
  lost_total=$((lost_total + $(python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["sent"]-r["received"])' <<<"$out")))
done
wire_stop
python3 - /tmp/$TAG-loss.json "$lost_total" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["directions"]["a_to_b"]
print(f"wire a_to_b: frames in {d['packets_in']}, dropped_loss {d['dropped_loss']} "
      f"({100*d['dropped_loss']/max(d['packets_in'],1):.3f}%); datagrams the probe missed: {sys.argv[2]}; "
      f"kernel drops {d['dropped_kernel']}")
PY
rm -f /tmp/$TAG-loss.json
