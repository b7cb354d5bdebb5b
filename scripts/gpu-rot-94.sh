#!/usr/bin/env bash
# GPU batch (twenty-first session): is PyTorch native's lead at the µs-sized softmax points
# (bf16 32 and 64: five rounds of gpu-small-93 put it ahead by 7–9%) the harness's doing?
# kernlab rotates its calls over up to 240 copies of the input and output (`--rotate auto`);
# do_bench gives PyTorch one buffer. So PyTorch native once as before and once rotated as
# kernlab is (baselines/torch_baselines.py --rotate auto, new), and kernlab's default kernels
# rotated and its plain-load build (KL_ROW_LOAD_HINT=0, which the flush evicts) on one buffer;
# four rounds interleaved, every point validated before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
SH="--shape 4096x32 --shape 4096x64 --shape 4096x256"
PS=4096x32,4096x64,4096x256
for r in 1 2 3 4; do
  for dt in bf16 f32; do
    n=kl-auto-$dt-$r
    timeout 60 $K bench softmax --dtype $dt $SH --variants auto --rep-ms 50 --rotate auto --seed $r --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1
    echo "$n $(tab "$OUT/$n.csv")" >> "$S"
    n=kl-plain1-$dt-$r
    timeout 60 env KERNLAB_NVRTC_DEFINES=KL_ROW_LOAD_HINT=0 $K bench softmax --dtype $dt $SH --variants auto --rep-ms 50 --rotate 1 --seed $r --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1
    echo "$n $(tab "$OUT/$n.csv")" >> "$S"
    for rot in 1 auto; do
      n=pt-rot$rot-$dt-$r
      timeout 90 python3 baselines/torch_baselines.py --op softmax --dtype $dt --shapes $PS --variants torch_native --rep-ms 50 --seed $r --rotate $rot --quiet --copy-bytes 0 --json "$OUT/$n.json" > "$OUT/$n.log" 2>&1
      echo "$n $(ttab "$OUT/$n.json")" >> "$S"
    done
  done
  el round $r
done
cat "$S"
