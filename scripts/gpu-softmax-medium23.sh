#!/usr/bin/env bash
# GPU batch (eighth session, research): f32 rows of 8192 and 16384 columns, where torch.compile
# (3.9 / 4.1 TB/s) leads kernlab's v3 (3.8 / 4.0). What does Inductor's kernel do (its Triton
# source; ncu's launch shape, occupancy and stalls) against v3?
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
SEC="--clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --print-details all"
keys=' Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Block Size|Grid Size|Registers Per|Shared Memory Configuration Size|Dynamic Shared|Static Shared|Waves Per SM|L2 Hit Rate|Stall'
cat > "$OUT/tc.py" <<'PY'
import sys, torch
cols = int(sys.argv[1]); n = int(sys.argv[2])
x = torch.randn(4096, cols, device="cuda")
f = torch.compile(lambda t: torch.softmax(t, -1))
for _ in range(n): y = f(x)
torch.cuda.synchronize()
ref = torch.softmax(x.double(), -1)
print("max abs err", (y.double() - ref).abs().max().item())
PY
for c in 8192 16384; do
  TORCH_LOGS=output_code timeout 120 python3 "$OUT/tc.py" $c 3 > "$OUT/code-$c.txt" 2>&1; echo "compile code $c exit $?" >> "$S"
  timeout 150 ncu $SEC -k regex:triton --launch-skip 10 -c 1 python3 "$OUT/tc.py" $c 20 > "$OUT/ncu-tc-$c.txt" 2>&1
  echo "ncu compile $c: $(grep -E "$keys" "$OUT/ncu-tc-$c.txt" | awk '{$1=$1};1' | tr '\n' ';' | cut -c1-900)" >> "$S"
  timeout 80 ncu $SEC -k regex:softmax_v3 -c 1 $K bench softmax --shape 4096x$c --dtype f32 --variants v3_block_regs --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-v3-$c.txt" 2>&1
  echo "ncu v3 $c: $(grep -E "$keys" "$OUT/ncu-v3-$c.txt" | awk '{$1=$1};1' | tr '\n' ';' | cut -c1-900)" >> "$S"
  el $c
done
grep -hE "num_warps|XBLOCK|R0_BLOCK|RBLOCK|def triton|reduction\(|persistent" "$OUT"/code-*.txt | sort | uniq -c | head -20 >> "$S"
cat "$S"
# And v8 bf16 again, this build (de3233e's kernel) against b1b5363's, interleaved: the
# prefetch build (its copy_smem helper) ran v8 bf16 2% slower than b1b5363.
for rep in 1 2; do for b in old new; do
  bin=$K; [ $b = old ] && bin=.gpu/old/kernlab
  timeout 60 $bin sweep softmax --rows 4096 --cols 131072,262144,524288 --max-elements 2^28 --dtype bf16,f32 --variants v8_onchip --rep-ms 15 --warmup-ms 5 --csv "$OUT/ab.csv" > "$OUT/ab-$b.log" 2>&1
  echo "v8 $b: $(python3 -c "
import csv
print(*[r['dtype']+':'+r['cols']+'='+(str(round(float(r['gbps']))) if r['status']=='ok' else '-') for r in csv.DictReader(open('$OUT/ab.csv'))])")" >> "$S"
done; done
el ab
tail -12 "$S"
