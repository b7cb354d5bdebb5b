#!/usr/bin/env bash
# GPU batch (twenty-fourth session's last): the split-row softmax tests (v6–v9, v9's smpair
# form) on main after the session's reverts, with KERNLAB_REQUIRE_GPU=1.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 150 final softmax_split_rows softmax_v9_smpair
el tests
cat "$S"
