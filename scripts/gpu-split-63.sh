#!/usr/bin/env bash
# Ran once (fourteenth session). The split form was then removed from kernels/softmax.cu
# (docs/perf-notes.md); run again, both halves time the default.
# GPU batch (fourteenth session): v8/v9 reducing a thread's part in the order its loads land
# (KL_ONCHIP_SPLIT=1: shared-memory packs, then each half of the register slots, each its own
# (max, Σ), merged) against the default (a sum pass over the whole part after its last byte).
# The softmax tests with the split form first, then `auto` at v8's and v9's widths, A/B
# interleaved twice, rotated; each point validated before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
export KERNLAB_NVRTC_DEFINES=KL_ONCHIP_SPLIT=1
KERNLAB_CACHE_DIR=/tmp/kc1 gpu_tests 200 softmax
el tests
W=65536,131072,262144,1048576,4194304
sw() { KERNLAB_NVRTC_DEFINES=KL_ONCHIP_SPLIT=$2 KERNLAB_CACHE_DIR=/tmp/kc$2 timeout "$1" $K sweep softmax --rows 4096 --cols $W --max-elements 2^28 --dtype f32,bf16 --variants auto --rep-ms 20 --rotate auto --csv "$OUT/$3.csv" > "$OUT/$3.log" 2>&1; echo "sweep $3 exit $? $(tail -c 300 "$OUT/$3.log" | grep -i error | head -2)" >> "$S"; }
sw 90 0 a0; sw 90 1 a1; sw 90 0 b0; sw 90 1 b1
el sweeps
for f in a0 a1 b0 b1; do echo "$f $(vtab "$OUT/$f.csv")" >> "$S"; done
cat "$S"
