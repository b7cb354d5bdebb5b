#!/usr/bin/env bash
# GPU batch (ninth session): (1) auto with 16-bit rows past v8's clusters of 2 going to v9
# (bf16 and f16, v8 and v9 beside it); (2) kernel-only times (CUPTI, no flush, back-to-back) of
# v3 (kernlab profile) and of torch.compile's softmax (torch.profiler) at f32 4096x8192 and
# 4096x16384, where compile leads in do_bench.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
timeout 120 $K sweep softmax --rows 4096 --cols 393216,524288,1048576 --max-elements 2^28 --dtype bf16,f16 --variants v8_onchip,v9_gridsync,auto --rep-ms 15 --warmup-ms 5 --csv "$OUT/auto16.csv" > "$OUT/auto16.log" 2>&1
echo "sweep exit $?" >> "$S"
python3 - "$OUT/auto16.csv" >> "$S" <<'PY'
import csv, sys
t, pick = {}, {}
for r in csv.DictReader(open(sys.argv[1])):
    k = (r["dtype"], int(r["cols"]), int(r["rows"]))
    t.setdefault(k, {})[r["variant"]] = f'{float(r["gbps"]):.0f}' if r["status"] == "ok" else r["status"][:10]
    if r["variant"] == "auto": pick[k] = r.get("picked", "")
vs = ["auto", "v8_onchip", "v9_gridsync"]
print("dtype cols rows", *vs, "pick")
for k in sorted(t): print(*k, *[t[k].get(v, "-") for v in vs], pick.get(k, ""))
PY
el auto16
for shape in 4096x8192 4096x16384; do
  timeout 60 $K profile softmax --variant v3_block_regs --shape $shape --iters 20 > "$OUT/prof-v3-$shape.log" 2>&1
  echo "v3 $shape (kernlab profile, 20 calls):" >> "$S"; grep -iE "softmax_v3|GPU busy" "$OUT/prof-v3-$shape.log" | head -3 | cut -c1-220 >> "$S"
done
timeout 150 python3 scripts/compile-softmax-kernels.py 4096x8192 4096x16384 > "$OUT/compile.log" 2>&1
echo "compile exit $?" >> "$S"; grep -E "compile kernel" "$OUT/compile.log" >> "$S"; tail -3 "$OUT/compile.log" | cut -c1-200 >> "$S"
el profiles
cat "$S"
