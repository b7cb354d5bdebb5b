#!/usr/bin/env bash
# GPU batch (thirty-sixth session), one call (~8 min): where v11's time goes, then what run 174
# left undone.
# 1. v11's chunk timeline (KL_V11_TRACE, examples/v11_trace.rs) at f32 256×1 Mi and
#    1024×131072. ncu (run 174) saw v11 at 3.73 TB/s of DRAM with 14 slots of 16 KB a CTA:
#    by Little's law a slot lives ~16 µs, against ~8 µs guessed from its steps (a loaded
#    copy's ~1.5 µs, the row's claims ~1 µs, the count's and merge's round trips ~1 µs each,
#    the write ~0.5 µs). Prediction: the row steps (last count add → state → writers) take
#    most of it; if instead the stats warps queue (copy issued → stats warp has it ≫ the load),
#    more stats warps or cheaper stats are the lever.
# 2. The same at fewer slots a CTA (bench, KERNLAB_V11=slots=N): if GB/s falls in proportion,
#    the chain's latency is the limit.
# 3. The GPU tests run 174 did not reach (its time ran out in v11's own test): the routing test
#    (updated for v11), v11's test and the tests after it in order; ptx:: runs on the CPU host.
# 4. The done-means sweep's 1 Mi to 4 Mi points, f32 and bf16, `auto` with --torch.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
for sh in "256 1048576" "1024 131072"; do
  KERNLAB_NVRTC_DEFINES=KL_V11_TRACE=1 timeout 60 .gpu/bin/v11_trace $sh f32 2 > "$OUT/trace-${sh/ /x}.log" 2>&1
  echo "trace $sh: exit $?" >> "$S"; tail -16 "$OUT/trace-${sh/ /x}.log" >> "$S"
done
el trace
for n in 14 10 7 4; do bench_points slots$n "256x1048576 1024x131072" v11_deal f32 KERNLAB_V11=slots=$n; done
el slots
gpu_tests 60 ops::softmax_auto_sends
gpu_tests 150 ops::softmax_v
gpu_tests 100 ops::tensors
gpu_tests 60 ops::workspaces
gpu_tests 100 profile::
el tests
for dt in f32 bf16; do
  timeout 150 $K sweep softmax --rows 4096 --cols 1048576,2097152,4194304 --max-elements 2^31 \
    --dtype $dt --variants auto --torch --rep-ms 30 --rotate auto --csv "$OUT/sweep-$dt.csv" \
    > "$OUT/sweep-$dt.log" 2>&1
  rtab "$OUT/sweep-$dt.csv" "sweep $dt" >> "$S"
done
el sweeps
cat "$S"
