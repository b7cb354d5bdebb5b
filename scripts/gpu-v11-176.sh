#!/usr/bin/env bash
# GPU batch (thirty-sixth session), one call (~6 min): v11 with kept exponentials and its
# stats in two sweeps of four chains a lane.
# Run 175's trace (f32 256×1 Mi): a slot lives 13.8 µs; the write warp takes 2.2 µs from the
# row's state to freeing the slot (plus 0.6 to its last store) and the stats warp 1.7 µs a
# chunk, both far over their work (a warp's 128 exponentials a lane are ~0.5 µs of its
# partition's MUFU), and 6 slots in 7 fewer lose 9% (3702 → 3382 GB/s): the chain's latency
# is the limit. Now an f32 softmax's stats warp writes e^(x − chunk max) back over the slot,
# so the write is a multiply (no exponential), and the stats take the chunk's max first and
# then the sum, each in independent chains (not one chain of 32 dependent maxima and sums).
# Prediction: the write's 2.8 µs to ~0.5, the stats' 1.7 to ~1.0, a slot's life 13.8 to
# ~10 µs; f32 256×1 Mi 3700 → ~3950 (TARGETS: 3900), 1024×131072 3712 → ~3900 (v8: 3840);
# bf16 (stats only) +1–3%. KL_V11_KEEP=0 (the same stats, the write recomputing) splits the two.
# Every point is validated against the f64 reference before it is timed (bench).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_NVRTC_DEFINES=KL_V11_TRACE=1 timeout 60 .gpu/bin/v11_trace 256 1048576 f32 2 > "$OUT/trace.log" 2>&1
echo "trace: exit $?" >> "$S"; tail -16 "$OUT/trace.log" >> "$S"
el trace
F="256x1048576 1024x131072 4096x32768 2048x65536"
bench_points keep "$F" v11_deal,auto f32
bench_points keep0 "$F" v11_deal f32 KERNLAB_NVRTC_DEFINES=KL_V11_KEEP=0
bench_points v8 "1024x131072 2048x65536" v8_onchip f32
bench_points b16 "256x1048576 1024x131072 128x2097152" v11_deal,auto bf16
timeout 60 $K bench softmax --dtype f32 --shape 256x1048576 --variants v11_deal --log-softmax --rep-ms 30 \
  --rotate auto --seed 1 --csv "$OUT/lg.csv" > "$OUT/lg.log" 2>&1; rtab "$OUT/lg.csv" log_softmax >> "$S"
el bench
gpu_tests 240 ops::softmax_v11 ops::softmax_matches_reference ops::softmax_special ops::softmax_strided ops::log_softmax ops::softmax_large ops::softmax_split ops::softmax_cuda_writes ops::softmax_auto_launch
el tests
cat "$S"
