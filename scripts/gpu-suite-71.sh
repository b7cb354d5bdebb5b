#!/usr/bin/env bash
# GPU batch (prepared in the fifteenth session for the next one; run it first): every GPU test
# executable (KERNLAB_REQUIRE_GPU=1, KERNLAB_REQUIRE_NVRTC=1). The fifteenth session changed
# tests it could not run on a GPU: softmax's special values on an output that starts finite,
# the packed/scalar refusal limits, the GPU-only split-row / v10 / large tensor-core tests
# (test_gpu!), may_refuse's sm_90 rule, the graph-replay test's timed records per op, the
# disk-cache test's folder; and code: auto's pick label (what run_auto ran), --rotate's memory
# check, the GEMM host-memory check, refused op flags, the "nothing was timed" exit.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 540
el tests
cat "$S"
