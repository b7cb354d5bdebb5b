#!/usr/bin/env bash
# GPU batch (thirty-third session), one call (~5-7 min): every GPU test executable
# (KERNLAB_REQUIRE_GPU=1, KERNLAB_REQUIRE_NVRTC=1) on the session's final code: softmax.rs split
# into a module of three files (v7-v10 moved, not changed), v3's split kernels and auto's band
# of 16-bit odd widths on them (2177-3457). Prediction: all pass (run 143: 215 passed).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 560
el tests
cat "$S"
