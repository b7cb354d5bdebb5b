#!/usr/bin/env bash
# GPU batch (sixteenth session): (1) the GPU tests of `kernlab profile` (log_softmax profiled
# for the first time) and of softmax (the launchers now take y's row stride; a new test writes
# strided outputs); (2) is v8's odd-width cost the sector two rows share? Odd widths at
# their own stride (each row starts anywhere in a 32-byte sector; the sector at a row boundary
# is written by two CTAs) against strides that start every row on a 32-byte boundary (no
# sector shared: the gap after a row is never written), input and output laid out alike
# (examples/softmax_layout.rs), and the aligned width for scale.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 120 profile
gpu_tests 300 softmax
el tests
L=.gpu/bin/softmax_layout
lay() { timeout 120 $L "$@" > "$OUT/layout-$1-$2-$4.txt" 2>&1; echo "$1 $2 $3x$4: $(grep -E 'round|Error|error' "$OUT/layout-$1-$2-$4.txt" | sed 's/ calls)//;s/(//' | awk '{print $4 "=" $7}' | tr '\n' ' ')" >> "$S"; }
lay v8_onchip bf16 4096 4097 4097,4112,4104
lay v8_onchip bf16 4096 4096 4096,4112
lay v3_block_regs bf16 4096 4096 4096,4112
lay v8_onchip bf16 4096 16385 16385,16400
lay v8_onchip f32 4096 12345 12345,12352
lay v8_onchip bf16 4096 12345 12345,12352
el layout
cat "$S"
