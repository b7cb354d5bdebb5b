#!/usr/bin/env bash
# GPU batch (twenty-second session): the done-means sweep with both sides rotated (as
# scripts/gpu-done83.sh: `bash scripts/gpu-done-97.sh bf16`, then `f32`), then one question a
# dtype. bf16: where bf16 4096×64 (and ×32) lose 0.4 µs to native with both sides rotated
# (gpu-baselines-96) — kernel time or around it: ncu's kernel durations (caches flushed before
# each kernel, clocks left alone) of kernlab's v2 and of PyTorch's softmax kernel. f32: v9's row
# timeline again with the skew split (loads out at once? the loads' spread) and each CTA's
# lateness, to see whether the same CTAs are late row after row.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
DT=${1:?dtype}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
timeout 500 $K sweep softmax --rows 4096 --cols 32..4194304:x2,33,255,1000,4097,12345,16385,65537,300007,1048577 --max-elements 2^31 --dtype "$DT" --variants auto --torch --rep-ms 30 --rotate auto --plot "$OUT/softmax-sweep-done-$DT.svg" --csv "$OUT/softmax-sweep-done-$DT.csv" > "$OUT/sweep.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
grep -m2 -i "copy\|ceiling" "$OUT/sweep.log" | cut -c1-200 >> "$S"
grep -m1 "PyTorch baselines (" "$OUT/sweep.log" | cut -c1-240 >> "$S"
done_table "$OUT/softmax-sweep-done-$DT.csv" >> "$S"
if [ "$DT" = bf16 ]; then
  SEC="--cache-control all --clock-control none --metrics gpu__time_duration.sum"
  med() { grep gpu__time_duration "$1" | awk '{print $NF}' | sort -g | awk '{a[NR]=$1} END {if (NR) print NR" kernels, median "a[int((NR+1)/2)]" us, min "a[1]; else print "none"}'; }
  for c in 32 64 256; do
    timeout 90 ncu $SEC -k regex:softmax_v2 -c 15 $K bench softmax --shape 4096x$c --dtype bf16 --variants v2_warp_row --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-kl-$c.txt" 2>&1
    echo "ncu kernlab v2 bf16 4096x$c: $(med "$OUT/ncu-kl-$c.txt")" >> "$S"
    timeout 90 ncu $SEC -k regex:softmax -c 15 python3 -c "
import torch
x = torch.randn(4096, $c, device='cuda', dtype=torch.bfloat16)
for _ in range(20): y = torch.softmax(x, -1)
torch.cuda.synchronize()" > "$OUT/ncu-torch-$c.txt" 2>&1
    echo "ncu torch bf16 4096x$c: $(med "$OUT/ncu-torch-$c.txt") $(grep -m1 -o '[a-z_]*softmax[a-zA-Z_]*' "$OUT/ncu-torch-$c.txt" | head -1)" >> "$S"
  done
  el ncu
else
  echo "trace 256 1048576 f32" >> "$S"
  KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 timeout 120 .gpu/bin/v9_trace 256 1048576 f32 2 > "$OUT/trace-f32.log" 2>&1
  echo "exit $?" >> "$S"; tail -17 "$OUT/trace-f32.log" >> "$S"
  el trace
fi
cat "$S"
