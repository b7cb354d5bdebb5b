#!/usr/bin/env bash
# GPU batch (eighth session): every test with KERNLAB_REQUIRE_GPU=1 on the build whose v8 is
# back to its b1b5363 form (PTX identical), v8 timed; then kernel durations alone (ncu's
# gpu__time_duration, L2 flushed before each, one pass) of torch.compile's softmax and v3 at
# f32 4096×8192 / 4096×16384, where do_bench puts compile 2.5% ahead and ncu's full sections
# put v3 ahead.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 330 .gpu/run-tests > "$OUT/tests.log" 2>&1; echo "run-tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | grep -v " 0 passed" | head -16 >> "$S"
el tests
timeout 60 $K sweep softmax --rows 4096 --cols 131072,262144,524288 --max-elements 2^28 --dtype f32,bf16 --variants v8_onchip --rep-ms 15 --warmup-ms 5 --csv "$OUT/v8.csv" > "$OUT/v8.log" 2>&1
echo "v8: $(python3 -c "
import csv
print(*[r['dtype']+':'+r['cols']+'='+(str(round(float(r['gbps']))) if r['status']=='ok' else '-') for r in csv.DictReader(open('$OUT/v8.csv'))])")" >> "$S"
el v8
cat > "$OUT/tc.py" <<'PY'
import sys, torch
cols = int(sys.argv[1]); n = int(sys.argv[2])
x = torch.randn(4096, cols, device="cuda")
f = torch.compile(lambda t: torch.softmax(t, -1))
for _ in range(n): y = f(x)
torch.cuda.synchronize()
PY
dur() { python3 -c "
import re,statistics,sys
v=[float(m) for m in re.findall(r'gpu__time_duration.sum\s+\S+\s+([0-9.]+)', open('$1').read())]
print(len(v), 'min', min(v) if v else '-', 'median', statistics.median(v) if v else '-')"; }
M="--metrics gpu__time_duration.sum --clock-control none"
for c in 8192 16384; do
  timeout 120 ncu $M -k regex:triton --launch-skip 40 -c 10 python3 "$OUT/tc.py" $c 60 > "$OUT/d-tc-$c.txt" 2>&1
  echo "compile $c µs: $(dur "$OUT/d-tc-$c.txt")" >> "$S"
  timeout 60 ncu $M -k regex:softmax_v3 --launch-skip 5 -c 10 $K bench softmax --shape 4096x$c --dtype f32 --variants v3_block_regs --rep-ms 1 --warmup-ms 1 > "$OUT/d-v3-$c.txt" 2>&1
  echo "v3 $c µs: $(dur "$OUT/d-v3-$c.txt")" >> "$S"
done
el durations
cat "$S"
