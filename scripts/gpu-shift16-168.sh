#!/usr/bin/env bash
# GPU batch (thirty-fourth session), one call (~2 min): the shifted-form GPU test, whose cases
# now include 16 rows of 4097 and 1001 columns (every offset in a pack), on the final kernels
# (the element-wise partial packs, after run 167's pieces were removed), and the buffer-source
# test. Prediction: both pass (run 165 passed them with 3-row cases; run 167 with the pieces).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 240 softmax_v3_shifts_odd_rows
gpu_tests 120 every_buffer_source
el tests
cat "$S"
