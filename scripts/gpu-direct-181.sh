#!/usr/bin/env bash
# Needs the code of commit 76cafe1 (the form it measures was not kept).
# GPU batch (thirty-seventh session), one call (~5 min): v11 with each CTA's write warps
# merging a row's states themselves (KERNLAB_NVRTC_DEFINES=KL_V11_DIRECT=1).
# Runs 178-180: neither holding chunks in registers nor more write warps moved a slot's life
# (13.8-15 µs); the row's chain after its last claim does (run 175: last chunk's copy and
# stats 5.7 µs, count add → merged state 2.6, state → last writer 2.8-3.4, write 2.4). In this
# form a stats warp adds to the row's count without waiting (red), and a write warp that meets
# a new row polls the count and merges the row's 256 states itself (once a CTA a row, through
# a shared-memory cache): one L2 round trip less (no row state published and polled).
# Prediction: state → writers 2.6 + 2.8 → ~2.5 µs; a slot's life 13.8 → ~11.5 µs; f32 256×1 Mi
# 3700 → ~4000, 1024×131072 3700 → ~3950; the extra L2 reads (~4 KB a CTA a row) cost < 1%.
# Every point is validated against the f64 reference before it is timed (bench).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
D=KERNLAB_NVRTC_DEFINES=KL_V11_DIRECT=1
gpu_start
KERNLAB_NVRTC_DEFINES=KL_V11_DIRECT=1 gpu_tests 200 ops::softmax_v11
el tests
F="256x1048576 1024x131072 2048x65536 128x2097152 64x4194304 4096x32768"
bench_points base "$F" v11_deal,auto f32
bench_points direct "$F" v11_deal f32 $D
B="256x1048576 1024x131072 128x2097152 64x4194304"
bench_points b_base "$B" v11_deal bf16
bench_points b_direct "$B" v11_deal bf16 $D
bench_points direct2 "256x1048576 1024x131072" v11_deal f32 $D
el bench
KERNLAB_NVRTC_DEFINES=KL_V11_DIRECT=1,KL_V11_TRACE=1 timeout 60 .gpu/bin/v11_trace 256 1048576 f32 2 > "$OUT/trace.log" 2>&1
echo "trace direct: exit $?" >> "$S"; tail -16 "$OUT/trace.log" >> "$S"
el trace
cat "$S"
