#!/usr/bin/env bash
# GPU batch (written in the twenty-first session for the next one): the PyTorch columns rotated
# as kernlab's calls are (`--torch --rotate`, twenty-first session). First the real-script test
# (a rotated softmax and a rotated linear: every variant ok, three copies each; the linear's
# rotation has not run on a GPU before). Then TARGETS.md's f32 softmax shapes with both sides
# rotated (at 4096×1024 torch.compile led by 6.6% with its input in L2 across the flush; its
# loads are evict_last too), the small widths (two rounds), and last v9's row timeline
# (examples/v9_trace.rs). Afterwards: `bash scripts/gpu-done83.sh bf16` and `f32`, the
# done-means sweep, whose --rotate auto now rotates its PyTorch columns as well.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 150 baselines the_real_baselines_script
el tests
timeout 240 $K bench softmax --dtype f32 --shape 8192x4096 --shape 4096x256 --shape 4096x1024 --shape 4096x12672 --shape 4096x32768 --shape 1024x131072 --shape 256x1048576 --variants auto --torch --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/targets.csv" > "$OUT/targets.log" 2>&1
echo "targets exit $?" >> "$S"
grep -m1 "PyTorch baselines (" "$OUT/targets.log" | cut -c1-300 >> "$S"
done_table "$OUT/targets.csv" >> "$S"
el targets
for r in 1 2; do
  for dt in f32 bf16; do
    n=small-$dt-$r
    timeout 150 $K bench softmax --dtype $dt --shape 4096x32 --shape 4096x64 --shape 4096x256 --shape 4096x1024 --variants auto --torch --rep-ms 30 --rotate auto --seed $r --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1
    echo "$n exit $?" >> "$S"; done_table "$OUT/$n.csv" | tail -n +2 >> "$S"
  done
done
el small
# v9's row timeline (examples/v9_trace.rs, new in the twenty-first session, not yet run on a
# GPU): where each wide row's ~4 µs beyond its traffic goes (the reduce's skew across the
# row's CTAs, the exchange, the stores).
for shape in "256 1048576 f32" "64 4194304 f32" "128 2097152 bf16"; do
  set -- $shape
  echo "trace $shape" >> "$S"
  KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 timeout 120 .gpu/bin/v9_trace $1 $2 $3 3 > "$OUT/trace-$1x$2-$3.log" 2>&1
  echo "exit $?" >> "$S"; tail -12 "$OUT/trace-$1x$2-$3.log" >> "$S"
done
el trace
cat "$S"
