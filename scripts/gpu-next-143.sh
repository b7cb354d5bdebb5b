#!/usr/bin/env bash
# GPU batch (written in the thirtieth session for the next lease), two calls:
# `bash scripts/gpu-next-143.sh suite` (~5 min): every GPU test executable with the settled
# form's review fixes (commit d15382e, unrun on a GPU when written): the gate word raised by
# fetch_max, the guard that frees the last ticket, the gate check's deadline, and the new
# assertion that host time between two launches stays out of a settled time.
# Prediction: all pass.
# `bash scripts/gpu-next-143.sh sweep [DTYPE]` (~6 min for f32): the done-means sweep with the
# verdict's settled lines. Prediction: the replay's settled line at or ahead at all but at most
# one or two of its points up to 65537 columns (runs 137, 139); `auto`'s own at fewer (kernlab's
# process reads the same kernel 0.0-0.7 µs higher, run 137).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
case "${1:?suite or sweep}" in
suite)
  gpu_tests 540
  el tests ;;
sweep)
  DT=${2:-f32}
  gpu_start
  done_sweep "$DT" 560
  el sweep
  sweep_summary "$DT" ;;
esac
cat "$S"
