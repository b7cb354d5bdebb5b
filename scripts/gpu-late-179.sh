#!/usr/bin/env bash
# Needs the code of commit be683ad (the form it measures was not kept).
# GPU batch (thirty-seventh session), one call (~5 min): v11's hold form, second try.
# Run 178's hold form (the chunk into registers before the row's wait) was 16% slower: only
# eight chunks a CTA could wait, one a write warp. This form waits as v11 does, the chunk in
# its slot, and only once the row's state is out takes the whole chunk into registers (128 a
# lane, 161-166 a thread, no spills) and frees the slot before computing and storing. Run
# 175's trace had a write warp 2.19 µs from the row's state to freeing the slot (its four
# passes of exponentials and stores); copying 32 packs a lane from shared memory is ~0.3 µs.
# Prediction: "row state → slot freed" 2.19 → ~0.4 µs, a slot's life 13.8 → ~12.2 µs, so
# f32 256×1 Mi 3700 → ~3950 and 1024×131072 3715 → ~3950 (v8: 3860); bf16 likewise +5-8%.
# Every point is validated against the f64 reference before it is timed (bench).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
gpu_tests 200 ops::softmax_v11
el tests
F="256x1048576 1024x131072 2048x65536 128x2097152 64x4194304 4096x32768"
bench_points deal "$F" v11_deal,auto f32
bench_points late "$F" v11_deal f32 KERNLAB_V11=hold=1
B="256x1048576 1024x131072 128x2097152 64x4194304"
bench_points b_deal "$B" v11_deal bf16
bench_points b_late "$B" v11_deal bf16 KERNLAB_V11=hold=1
bench_points late2 "256x1048576 1024x131072" v11_deal f32 KERNLAB_V11=hold=1
el bench
KERNLAB_V11=hold=1 KERNLAB_NVRTC_DEFINES=KL_V11_TRACE=1 timeout 60 .gpu/bin/v11_trace 256 1048576 f32 2 > "$OUT/trace.log" 2>&1
echo "trace late hold: exit $?" >> "$S"; tail -16 "$OUT/trace.log" >> "$S"
el trace
cat "$S"
