#!/usr/bin/env bash
# GPU batch (seventeenth session): v9's scalar head and tail. ptxas issues v9's plain scalar
# load after the cp.async wait (SASS: LDG after DEPBAR.LE SB0), so rank 0's scalar threads
# wait a second trip to memory each row, and the row's CTAs wait for rank 0.
# KL_V9_PREFETCH=1 prefetches the scalar's line to L1 first (CCTL.E.PF1), and ptxas then
# issues the load before the wait. Default against it, interleaved twice, `auto` (v9 at these
# widths), odd widths with aligned controls; then the softmax GPU tests with the form.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
SH="--shape 256x1048577 --shape 256x1048576 --shape 128x2097153 --shape 64x4194305 --shape 64x4194304"
for round in 1 2; do
  for form in default KL_V9_PREFETCH=1; do
    d=$form; [ $form = default ] && d=
    KERNLAB_NVRTC_DEFINES=$d timeout 200 $K bench softmax $SH --dtype f32,bf16 --variants auto \
      --rep-ms 20 --rotate auto --csv "$OUT/p-$form-$round.csv" > "$OUT/p-$form-$round.txt" 2>&1
    el "$form $round: exit $?"
  done
done
python3 - "$OUT" >> "$S" <<'PY'
import csv, sys, collections
out = sys.argv[1]; g = collections.defaultdict(list); forms = ["default", "KL_V9_PREFETCH=1"]
for f in forms:
    for r in (1, 2):
        try: rows = list(csv.DictReader(open(f"{out}/p-{f}-{r}.csv")))
        except Exception as e: print(f, r, e); continue
        for x in rows:
            g[(x['dtype'], x['rows'], x['cols']), f].append(float(x['gbps']) if x['status'] == 'ok' else float('nan'))
            g[(x['dtype'], x['rows'], x['cols']), 'pick'] = [x.get('picked', '?')]
m = lambda v: sum(v) / len(v) if v else float('nan')
print("dtype rows cols pick: default r1/r2 | prefetch r1/r2 (change)")
for k in sorted({k for k, _ in g}, key=lambda k: (k[0], int(k[2]))):
    a, b = g[k, forms[0]], g[k, forms[1]]; f = lambda v: "/".join(f"{x:.0f}" for x in v)
    print(*k, g[k, 'pick'][0], f"{f(a)} | {f(b)} ({100*(m(b)/m(a)-1):+.1f}%)")
PY
KERNLAB_NVRTC_DEFINES=KL_V9_PREFETCH=1 gpu_tests 220 softmax softmax
el tests
cat "$S"
