#!/usr/bin/env bash
# GPU batch (written in the twentieth session for the next one): does kernlab's rotation cost
# it the µs-sized softmax points where PyTorch native leads (f32 64 and 256, bf16 32)? kernlab
# rotates its calls over up to 240 copies of the input at these widths; PyTorch's do_bench
# reads one buffer, flushed. Rotation cannot simply be dropped for kernlab's default kernels:
# their evict_last lines survive the flush. So, with plain loads (KL_ROW_LOAD_HINT=0, which
# the flush does evict), `--rotate 1` against `--rotate auto`: a gap there is the rotation's
# own cost (address translation, say). Then the default kernels rotated, and PyTorch; two
# rounds, interleaved, each point validated first.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
b() {  # b NAME ROTATE [env...]: auto at the small widths, both dtypes
  local n=$1 rot=$2; shift 2
  for dt in f32 bf16; do
    timeout 60 env "$@" $K bench softmax --dtype $dt --shape 4096x32 --shape 4096x64 --shape 4096x256 --variants auto --rep-ms 30 --rotate $rot --seed 1 --csv "$OUT/$n-$dt.csv" > "$OUT/$n-$dt.log" 2>&1
    echo "$n $(ptab "$OUT/$n-$dt.csv")" >> "$S"
  done
}
for r in 1 2; do
  b plain-rot1-$r 1 KERNLAB_NVRTC_DEFINES=KL_ROW_LOAD_HINT=0
  b plain-rotauto-$r auto KERNLAB_NVRTC_DEFINES=KL_ROW_LOAD_HINT=0
  b default-rotauto-$r auto
done
el rotation
for dt in f32 bf16; do
  timeout 120 $K bench softmax --dtype $dt --shape 4096x32 --shape 4096x64 --shape 4096x256 --variants auto --torch --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/torch-$dt.csv" > "$OUT/torch-$dt.log" 2>&1
  done_table "$OUT/torch-$dt.csv" >> "$S"
done
el torch
cat "$S"
