#!/usr/bin/env bash
# GPU batch (twenty-sixth session, commit 4781ef4 and its scripts): the done-means sweep again
# on the current dispatch (v8's f32 rule of the twenty-fifth session is new since the table's
# run, gpu-done-97 on e2f94c1), both sides rotated, as gpu-done-97 without its extras:
# `bash scripts/gpu-done-120.sh f32`, then `bf16`; a second argument `tests` first runs the
# softmax GPU tests (KERNLAB_REQUIRE_GPU=1).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
DT=${1:?dtype}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
if [ "${2:-}" = tests ]; then gpu_tests 240 softmax; el tests; fi
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
done_sweep "$DT" 540
el sweep
grep -m2 -i "copy\|ceiling" "$OUT/sweep.log" | cut -c1-200 >> "$S"
grep -m1 "PyTorch baselines (" "$OUT/sweep.log" | cut -c1-240 >> "$S"
done_table "$OUT/softmax-sweep-done-$DT.csv" >> "$S"
cat "$S"
