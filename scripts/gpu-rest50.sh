#!/usr/bin/env bash
# GPU batch (twelfth session): the GPU tests gpu-flush48.sh's 330 s did not reach (softmax,
# profile, ptx; the suite runs in that order), then the pure stream of the done sweep
# (GeLU v2, plain loads: no rotation needed) with --rotate 1, which gpu-softmax-done49.sh's
# 110 s did not finish with --rotate auto.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 250 softmax
gpu_tests 120 profile
gpu_tests 100 ptx
el tests
timeout 150 $K sweep gelu --rows 4096 --cols 4096..4194304:x2,4097,12345,16385,65537,300007,1048577 --max-elements 2^28 --dtype f32,bf16 --variants v2_vec16 --rep-ms 30 --csv "$OUT/stream-done.csv" > "$OUT/stream.log" 2>&1; echo "stream exit $?" >> "$S"
el stream
echo "stream: $(tab "$OUT/stream-done.csv")" >> "$S"
cat "$S"
