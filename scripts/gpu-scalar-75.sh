#!/usr/bin/env bash
# GPU batch (sixteenth session): v8's and v9's scalar head and tail copied by cp.async with the
# row's other copies (gpu-src-74: ptxas issued their plain loads after the cp.async wait, or
# after the first use of the packs' data, a second trip to memory; bf16 4096×4097 8% under
# 4096). (1) the softmax GPU tests with the change; (2) `auto` before (.gpu/bin/kernlab-old,
# built from the previous commit) and after, interleaved twice, at the odd widths v8 and v9
# take, and two aligned widths as the control.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 300 softmax
el tests
SH="--shape 4096x4096 --shape 4096x4097 --shape 4096x12345 --shape 4096x16385 --shape 4096x65537 --shape 512x300007 --shape 256x1048577 --shape 256x1048576"
for round in 1 2; do
  for b in old new; do
    bin=.gpu/bin/kernlab; [ $b = old ] && bin=.gpu/bin/kernlab-old
    timeout 200 $bin bench softmax $SH --dtype f32,bf16 --variants auto --rep-ms 20 --rotate auto \
      --csv "$OUT/ab-$b-$round.csv" > "$OUT/ab-$b-$round.txt" 2>&1
    el "$b $round"
  done
done
python3 - "$OUT" >> "$S" <<'PY'
import csv, sys, collections
out = sys.argv[1]; g = collections.defaultdict(list); pick = {}
for b in ("old", "new"):
    for r in (1, 2):
        try: rows = list(csv.DictReader(open(f"{out}/ab-{b}-{r}.csv")))
        except Exception as e: print(b, r, e); continue
        for x in rows:
            k = (x['dtype'], x['rows'], x['cols'])
            g[k, b].append(float(x['gbps']) if x['status'] == 'ok' else float('nan'))
            pick[k] = x.get('picked', '')
print("dtype rows cols pick: old r1/r2 -> new r1/r2 (change of means)")
for k in sorted({k for k, _ in g}, key=lambda k: (k[0], int(k[2]))):
    o, n = g[k, "old"], g[k, "new"]
    ch = (sum(n) / len(n)) / (sum(o) / len(o)) - 1 if o and n else float('nan')
    print(*k, pick[k][:12], "/".join(f"{v:.0f}" for v in o), "->", "/".join(f"{v:.0f}" for v in n), f"{100*ch:+.1f}%")
PY
cat "$S"
