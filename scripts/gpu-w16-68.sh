#!/usr/bin/env bash
# GPU batch (fifteenth session, first): v8's 16-bit cluster rule (`v8_wide16_cluster`: four or
# eight CTAs sized two an SM where the share is 6144–8192 packs). The softmax tests with the
# rule in place (auto's picks for wide rows, v8 at bf16 9×262147 and f16 6×524288 in the
# split-row test), then `auto` with the rule against `auto` without it (KERNLAB_V8=wide16=0),
# interleaved twice, bf16 at the measured widths and three new ones the rule takes, f16 once.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 240 softmax
el tests
ab() { KERNLAB_V8=$1 timeout 90 $K sweep softmax --rows 4096 --cols "$2" --max-elements 2^28 --dtype "$3" --variants auto --rep-ms 20 --rotate auto --csv "$OUT/$4.csv" > "$OUT/$4.log" 2>&1; echo "$4 exit $? $(ptab "$OUT/$4.csv")" >> "$S"; }
W=196608,229376,262144,300008,393216,458752,524288
ab "" $W bf16 new1; ab wide16=0 $W bf16 old1; ab "" $W bf16 new2; ab wide16=0 $W bf16 old2
ab "" 262144,524288 f16 f16new; ab wide16=0 262144,524288 f16 f16old
el ab
cat "$S"
