#!/usr/bin/env bash
# GPU batch (seventeenth session): v2's block size at the narrow widths where `auto` (v2)
# trails PyTorch native or torch.compile by fractions of a µs (f32 128–512, bf16 32–64):
# 128 threads (default) against 256, 512 and 1024 (KERNLAB_V2=threads=N with the kernels
# compiled for it, KERNLAB_NVRTC_DEFINES=KL_V2_THREADS=N), interleaved three rounds, rotated.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
SH=""; for c in 32 64 128 256 512 1000 1024; do SH="$SH --shape 4096x$c"; done
for round in 1 2 3; do
  for t in 128 256 512 1024; do
    d=; v=; [ $t != 128 ] && d=KL_V2_THREADS=$t && v=threads=$t
    KERNLAB_NVRTC_DEFINES=$d KERNLAB_V2=$v timeout 100 $K bench softmax $SH --dtype f32,bf16 \
      --variants v2_warp_row --rep-ms 20 --rotate auto --csv "$OUT/t$t-$round.csv" > "$OUT/t$t-$round.txt" 2>&1
    el "threads $t round $round: exit $?"
  done
done
# The error when the kernels were not compiled for the block size asked for:
KERNLAB_V2=threads=512 $K bench softmax --shape 64x256 --variants v2_warp_row --rep-ms 1 2>&1 | grep -i "threads" | head -2 | cut -c1-300 >> "$S"
python3 - "$OUT" >> "$S" <<'PY'
import csv, sys, collections
out = sys.argv[1]; g = collections.defaultdict(list); ts = [128, 256, 512, 1024]
for t in ts:
    for r in (1, 2, 3):
        try: rows = list(csv.DictReader(open(f"{out}/t{t}-{r}.csv")))
        except Exception as e: print(t, r, e); continue
        for x in rows:
            g[(x['dtype'], int(x['cols'])), t].append(float(x['gbps']) if x['status'] == 'ok' else float('nan'))
m = lambda v: sum(v) / len(v) if v else float('nan')
print("dtype cols: threads 128 r1/r2/r3 | 256 (mean change) | 512 | 1024")
for k in sorted({k for k, _ in g}):
    b = g[k, 128]; f = lambda v: "/".join(f"{x:.0f}" for x in v)
    print(*k, f(b), *[f"| {f(g[k, t])} ({100*(m(g[k, t])/m(b)-1):+.1f}%)" for t in ts[1:]])
PY
cat "$S"
