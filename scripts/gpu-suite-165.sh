#!/usr/bin/env bash
# GPU batch (thirty-fourth session), one call (~5-7 min): every GPU test executable
# (KERNLAB_REQUIRE_GPU=1, KERNLAB_REQUIRE_NVRTC=1) on the session's code after v3's K = 12/16
# kernels were removed, pool2m's slices became the length asked and a GPU test of every buffer
# source was added (run 165). Prediction: all pass (run 162: 219 passed; now 220).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 560
el tests
cat "$S"
