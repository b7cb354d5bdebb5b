#!/usr/bin/env bash
# GPU batch (ninth session): the same v3 kernel under both harnesses. triton.testing.do_bench
# (scripts/do-bench-v3.py, beside torch.compile and torch.softmax) and kernlab bench, twice
# each, f32 4096x8192 and 4096x16384.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
ptxas -arch=sm_90a .gpu/ptx/v3_k4_f32.ptx -o /tmp/v3.cubin > "$OUT/ptxas.log" 2>&1; echo "ptxas exit $?" >> "$S"
timeout 200 python3 scripts/do-bench-v3.py .gpu/ptx/v3_k4_f32.ptx > "$OUT/py.log" 2>&1; echo "python exit $?" >> "$S"
grep -E "f32 " "$OUT/py.log" >> "$S"; grep -iE "error|Traceback" "$OUT/py.log" | head -3 >> "$S"
for rep in 1 2; do
  timeout 60 $K bench softmax --shape 4096x8192 --shape 4096x16384 --variants v3_block_regs --csv "$OUT/k$rep.csv" > "$OUT/k$rep.log" 2>&1
  echo "kernlab bench v3: $(python3 -c "import csv; print(*[r['cols']+'='+str(round(float(r['gbps']))) for r in csv.DictReader(open('$OUT/k$rep.csv'))])")" >> "$S"
done
el done
cat "$S"
