#!/usr/bin/env bash
# Needs the code of commit 06157f4 (the form it measures was not kept).
# GPU batch (thirty-seventh session), one call (~8 min): v11's hold form (KERNLAB_V11=hold=1).
# Run 175's trace: a 16 KB chunk spends 5.8 of its 13.8 µs slot life in a write warp waiting
# for its row, and fewer slots cost in proportion (10 of 14: −9%), so the chain's latency
# over the slots is v11's limit. The hold form's eight write warps take their chunk out of the
# slot into registers (128 a lane; 160-168 a thread, no spills, 384 threads) and free the slot
# before the wait, so a CTA has 14 slots + 8 held chunks on chip instead of 14 (×1.57).
# Prediction: the slot's life 13.8 → ~6 µs, f32 256×1 Mi 3700 → ~3950 (TARGETS: 3900),
# 1024×131072 3712 → ~3900 (v8: 3850), bf16 256×1 Mi 3544 → ~3800; 64×4 Mi (16 MB rows)
# 2393 → ~3000 (more rows in flight). Three stats warps instead of four: run 175's were busy
# ~40% of the time, so ~53%.
# Every point is validated against the f64 reference before it is timed (bench).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
gpu_tests 200 ops::softmax_v11
el tests
F="256x1048576 1024x131072 2048x65536 128x2097152 64x4194304 4096x32768"
bench_points deal "$F" v11_deal,auto f32
bench_points hold "$F" v11_deal f32 KERNLAB_V11=hold=1
B="256x1048576 1024x131072 128x2097152 64x4194304"
bench_points b_deal "$B" v11_deal,auto bf16
bench_points b_hold "$B" v11_deal bf16 KERNLAB_V11=hold=1
bench_points hold10 "256x1048576 1024x131072" v11_deal f32 KERNLAB_V11=hold=1,slots=10
bench_points odd "256x1048577" v11_deal,auto f32 KERNLAB_V11=hold=1
el bench
KERNLAB_V11=hold=1 KERNLAB_NVRTC_DEFINES=KL_V11_TRACE=1 timeout 60 .gpu/bin/v11_trace 256 1048576 f32 2 > "$OUT/trace.log" 2>&1
echo "trace hold: exit $?" >> "$S"; tail -16 "$OUT/trace.log" >> "$S"
el trace
cat "$S"
