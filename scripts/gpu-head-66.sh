#!/usr/bin/env bash
# Ran once (fourteenth session). KL_V8_HEAD_ALIGN was then removed (docs/perf-notes.md), so
# every column now times the default.
# GPU batch (fourteenth session): v8's scalar head up to a 32- or 128-byte boundary
# (KL_V8_HEAD_ALIGN) instead of 16. At odd widths each warp's 16-byte packs start 16 bytes
# into a 32-byte sector, so a warp's 512 bytes touch 17 sectors, not 16, in loads and stores
# (partial sectors shared with the next warp). gpu-odd-64: the peel costs bf16 4097 8% and
# 12345 7% against the aligned width, with no extra DRAM bytes. `auto` (v8 here), A/B/C
# interleaved twice, rotated, every point validated first.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
sw() { KERNLAB_NVRTC_DEFINES=KL_V8_HEAD_ALIGN=$2 KERNLAB_CACHE_DIR=/tmp/kc$2 timeout "$1" $K sweep softmax --rows 4096 --cols "$3" --dtype "$4" --variants auto --rep-ms 20 --rotate auto --csv "$OUT/$5.csv" > "$OUT/$5.log" 2>&1; echo "$5 exit $? $(tab "$OUT/$5.csv")" >> "$S"; }
F=2001,4097,12345,16385
B=2001,4097,8193,12345,16385,65537
for i in 1 2; do
  for a in 16 32 128; do sw 60 $a $F f32 f$a-$i; sw 60 $a $B bf16 b$a-$i; done
done
el sweeps
cat "$S"
