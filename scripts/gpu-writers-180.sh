#!/usr/bin/env bash
# Needs the code of commit ffa4c49 (the form it measures was not kept).
# GPU batch (thirty-seventh session), one call (~5 min): v11 with more write warps.
# Runs 178 and 179 (the hold forms) said the eight write warps are what a chunk waits for: in
# run 175's trace a chunk waited 5.6 µs from its copy to a write warp against 2.2 to a stats
# warp, and lengthening the write warps' cycle by ~0.8 µs (run 179) cost 10%. The write warps
# are now the launch's (KERNLAB_V11=writers=W, up to 15; kernels bounded for 20 warps: 86-93
# registers, no spills). Prediction: writers=15 takes "copy issued → write warp has it" from
# 5.6 to ~2.5 µs and the slot's life from 13.8 to ~12.5, so f32 256×1 Mi 3715 → ~3950 and
# 1024×131072 3700 → ~3900; writers=8 as before (3703-3715 in runs 178-179).
# Every point is validated against the f64 reference before it is timed (bench).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
gpu_tests 200 ops::softmax_v11
el tests
F="256x1048576 1024x131072 2048x65536 128x2097152 64x4194304 4096x32768"
bench_points w8 "$F" v11_deal,auto f32
bench_points w12 "$F" v11_deal f32 KERNLAB_V11=writers=12
bench_points w15 "$F" v11_deal f32 KERNLAB_V11=writers=15
B="256x1048576 1024x131072 128x2097152 64x4194304"
bench_points b_w8 "$B" v11_deal bf16
bench_points b_w15 "$B" v11_deal bf16 KERNLAB_V11=writers=15
el bench
KERNLAB_V11=writers=15 KERNLAB_NVRTC_DEFINES=KL_V11_TRACE=1 timeout 60 .gpu/bin/v11_trace 256 1048576 f32 2 > "$OUT/trace.log" 2>&1
echo "trace writers=15: exit $?" >> "$S"; tail -16 "$OUT/trace.log" >> "$S"
el trace
cat "$S"
