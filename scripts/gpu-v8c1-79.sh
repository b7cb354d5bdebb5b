#!/usr/bin/env bash
# GPU batch (seventeenth session): v8 without the prologue's divisions (one-CTA rows take
# blockIdx.x, cluster rows %clusterid.x) against the previous commit's binary
# (.gpu/bin/kernlab-old, copied in after ../shared/gpu/pack), and the f32-only plain-scalar
# form (KERNLAB_NVRTC_DEFINES=KL_V8_SCALAR=1), interleaved twice, `auto` (v8 at these widths);
# then the softmax GPU tests.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
SH="--shape 4096x4097 --shape 4096x12345 --shape 4096x16385 --shape 4096x65537 --shape 2048x131072 --shape 1024x262144 --shape 512x300007"
for round in 1 2; do
  for form in old new scalar; do
    bin=$K; d=; [ $form = old ] && bin=.gpu/bin/kernlab-old; [ $form = scalar ] && d=KL_V8_SCALAR=1
    KERNLAB_NVRTC_DEFINES=$d timeout 200 $bin bench softmax $SH --dtype f32,bf16 --variants auto \
      --rep-ms 20 --rotate auto --csv "$OUT/x-$form-$round.csv" > "$OUT/x-$form-$round.txt" 2>&1
    el "$form $round: exit $?"
  done
done
python3 - "$OUT" >> "$S" <<'PY'
import csv, sys, collections
out = sys.argv[1]; g = collections.defaultdict(list); forms = ["old", "new", "scalar"]
for f in forms:
    for r in (1, 2):
        try: rows = list(csv.DictReader(open(f"{out}/x-{f}-{r}.csv")))
        except Exception as e: print(f, r, e); continue
        for x in rows:
            g[(x['dtype'], x['rows'], x['cols']), f].append(float(x['gbps']) if x['status'] == 'ok' else float('nan'))
            g[(x['dtype'], x['rows'], x['cols']), 'pick'] = [x['variant']]
print("dtype rows cols pick: old r1/r2 | new r1/r2 (change) | scalar r1/r2 (change against new)")
m = lambda v: sum(v) / len(v) if v else float('nan')
for k in sorted({k for k, _ in g}, key=lambda k: (k[0], int(k[2]))):
    o, n, s = g[k, "old"], g[k, "new"], g[k, "scalar"]
    f = lambda v: "/".join(f"{x:.0f}" for x in v)
    print(*k, g[k, 'pick'][0][:12], f"{f(o)} | {f(n)} ({100*(m(n)/m(o)-1):+.1f}%) | {f(s)} ({100*(m(s)/m(n)-1):+.1f}%)")
PY
gpu_tests 200 softmax softmax
el tests
cat "$S"
