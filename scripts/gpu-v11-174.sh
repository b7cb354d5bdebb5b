#!/usr/bin/env bash
# GPU batch (written in the thirty-fifth session, not yet run: that session's device time ran
# out after run 173), one call (up to ~10 min): every GPU test executable on the code with v11_deal
# (KERNLAB_REQUIRE_GPU=1, KERNLAB_REQUIRE_NVRTC=1): v11 then meets the tests that every
# registered softmax version runs (the width list, special values, strided rows, log_softmax),
# which runs 170-173 did not run; then `auto` at the points the routing moved, with the
# PyTorch columns, both sides rotated: f32 256×1 Mi (TARGETS: ≥ 3900) and the done-means
# sweep's 1 Mi to 4 Mi points of 16-bit and f32 rows of whole packs.
# Prediction: all tests pass (run 165: 220; now 222); f32 256×1 Mi ~3700 GB/s, 2× native or
# more (TARGETS' 3900 stays 5% short); the sweep's f32 1 Mi at ≥ 1.9× native.
# Every point is validated against the f64 reference before it is timed (bench).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 400
el tests
timeout 150 $K bench softmax --dtype f32 --shape 256x1048576 --variants auto,v9_gridsync --torch \
  --rep-ms 30 --rotate auto --repeat 3 --csv "$OUT/targets.csv" > "$OUT/targets.log" 2>&1
rtab "$OUT/targets.csv" targets >> "$S"; tail -4 "$OUT/targets.log" >> "$S"
el targets
for dt in f32 bf16; do
  timeout 150 $K sweep softmax --rows 4096 --cols 1048576,2097152,4194304 --max-elements 2^31 \
    --dtype $dt --variants auto --torch --rep-ms 30 --rotate auto --csv "$OUT/sweep-$dt.csv" \
    > "$OUT/sweep-$dt.log" 2>&1
  rtab "$OUT/sweep-$dt.csv" "sweep $dt" >> "$S"
done
el sweeps
cat "$S"
