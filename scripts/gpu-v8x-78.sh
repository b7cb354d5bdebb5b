#!/usr/bin/env bash
# GPU batch (prepared in the sixteenth session, run in the seventeenth; the defines are gone
# since: docs/perf-notes.md, seventeenth session, has the kept form): v8's two experiment forms
# against the default, interleaved twice, `auto` (v8 at these widths) with the forms chosen
# by KERNLAB_NVRTC_DEFINES (one binary; the kernel cache keys on the defines):
#   KL_V8_C1=1      rows on one CTA skip the divisions by the cluster size (prologue);
#   KL_V8_SCALAR=1  the scalar by a plain load seeding the register max, not by cp.async
#                   (f32 4097 lost 1.5% with cp.async; both dtypes' SASS issue it first).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
SH="--shape 4096x4097 --shape 4096x12345 --shape 4096x16385 --shape 4096x65536 --shape 4096x65537 --shape 512x300007"
for round in 1 2; do
  for form in default KL_V8_C1=1 KL_V8_SCALAR=1; do
    d=$form; [ $form = default ] && d=
    KERNLAB_NVRTC_DEFINES=$d timeout 200 $K bench softmax $SH --dtype f32,bf16 --variants auto \
      --rep-ms 20 --rotate auto --csv "$OUT/x-$form-$round.csv" > "$OUT/x-$form-$round.txt" 2>&1
    el "$form $round"
  done
done
python3 - "$OUT" >> "$S" <<'PY'
import csv, sys, collections
out = sys.argv[1]; g = collections.defaultdict(list); forms = ["default", "KL_V8_C1=1", "KL_V8_SCALAR=1"]
for f in forms:
    for r in (1, 2):
        try: rows = list(csv.DictReader(open(f"{out}/x-{f}-{r}.csv")))
        except Exception as e: print(f, r, e); continue
        for x in rows:
            g[(x['dtype'], x['rows'], x['cols']), f].append(float(x['gbps']) if x['status'] == 'ok' else float('nan'))
print("dtype rows cols: default r1/r2 | C1 r1/r2 (change) | SCALAR r1/r2 (change)")
for k in sorted({k for k, _ in g}, key=lambda k: (k[0], int(k[2]))):
    base = g[k, "default"]; m = lambda v: sum(v) / len(v) if v else float('nan')
    cells = ["/".join(f"{v:.0f}" for v in base)]
    for f in forms[1:]:
        v = g[k, f]; cells.append("/".join(f"{x:.0f}" for x in v) + f" ({100*(m(v)/m(base)-1):+.1f}%)")
    print(*k, " | ".join(cells))
PY
cat "$S"
