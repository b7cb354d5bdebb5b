#!/usr/bin/env bash
# GPU batch (twenty-first session): the PyTorch columns rotated as kernlab's calls are
# (`--torch --rotate`, new). The real-script test (three rotated copies, every variant ok),
# then `kernlab bench softmax --torch --rotate auto` end to end (bf16 4096×32 and ×256: the
# torch rows must carry their copies), then PyTorch native at f32 4096×{32, 64, 256} on one
# buffer and rotated, three rounds, with the script's garbage collector now off while it times
# (one rotated process of gpu-rot-94 ran 3–4× slow at every shape, as if the GPU waited on the host).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 90 baselines the_real_baselines_script
el tests
timeout 150 $K bench softmax --dtype bf16 --shape 4096x32 --shape 4096x256 --variants auto --torch --rotate auto --rep-ms 30 --seed 1 --csv "$OUT/e2e.csv" > "$OUT/e2e.log" 2>&1
echo "e2e exit $?" >> "$S"
grep -i "PyTorch baselines" "$OUT/e2e.log" | head -3 | cut -c1-400 >> "$S"
python3 -c "
import csv
for r in csv.DictReader(open('$OUT/e2e.csv')): print(r['variant'], r['cols'], r['status'], r['rotate_copies'], round(float(r['gbps'] or 0)))" >> "$S"
el e2e
for r in 1 2 3; do
  for rot in 1 auto; do
    n=pt-rot$rot-f32-$r
    timeout 90 python3 baselines/torch_baselines.py --op softmax --dtype f32 --shapes 4096x32,4096x64,4096x256 --variants torch_native --rep-ms 50 --seed $r --rotate $rot --quiet --copy-bytes 0 --json "$OUT/$n.json" > "$OUT/$n.log" 2>&1
    echo "$n $(ttab "$OUT/$n.json")" >> "$S"
  done
done
el rounds
cat "$S"
