#!/usr/bin/env bash
# GPU batch (twenty-second session): the µs-sized widths, where the done-means sweep
# (gpu-done-97) had native 10% ahead at f32 32, 33 and 64 with both sides rotated while ncu put
# kernlab's v2 kernel ahead of PyTorch's at bf16 (caches flushed before each kernel). The
# difference then lies around the kernel: one candidate is the flush before each timed call —
# the driver's memset in kernlab, PyTorch's fill kernel in do_bench. First the new GPU test
# (both flush forms overwrite the buffer), then ncu's kernel durations at f32, then three rounds
# of KERNLAB_FLUSH=kernel (with the PyTorch columns) against the default memset.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 60 flush cuda_both_flush_forms
el tests
SEC="--cache-control all --clock-control none --metrics gpu__time_duration.sum"
med() { grep gpu__time_duration "$1" | awk '{print $NF}' | sort -g | awk '{a[NR]=$1} END {if (NR) print NR" kernels, median "a[int((NR+1)/2)]" us, min "a[1]; else print "none"}'; }
for c in 32 64; do
  timeout 90 ncu $SEC -k regex:softmax_v2 -c 15 $K bench softmax --shape 4096x$c --dtype f32 --variants v2_warp_row --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-kl-$c.txt" 2>&1
  echo "ncu kernlab v2 f32 4096x$c: $(med "$OUT/ncu-kl-$c.txt")" >> "$S"
  timeout 90 ncu $SEC -k regex:softmax -c 15 python3 -c "
import torch
x = torch.randn(4096, $c, device='cuda')
for _ in range(20): y = torch.softmax(x, -1)
torch.cuda.synchronize()" > "$OUT/ncu-torch-$c.txt" 2>&1
  echo "ncu torch f32 4096x$c: $(med "$OUT/ncu-torch-$c.txt")" >> "$S"
done
el ncu
SH="--shape 4096x32 --shape 4096x33 --shape 4096x64 --shape 4096x256"
for r in 1 2 3; do
  KERNLAB_FLUSH=kernel timeout 120 $K bench softmax --dtype f32,bf16 $SH --variants auto --torch --rep-ms 30 --rotate auto --seed $r --csv "$OUT/kernel-$r.csv" > "$OUT/kernel-$r.log" 2>&1
  echo "kernel-$r exit $?" >> "$S"; done_table "$OUT/kernel-$r.csv" >> "$S"
  timeout 60 $K bench softmax --dtype f32,bf16 $SH --variants auto --rep-ms 30 --rotate auto --seed $r --csv "$OUT/memset-$r.csv" > "$OUT/memset-$r.log" 2>&1
  echo "memset-$r exit $?" >> "$S"; vtab "$OUT/memset-$r.csv" >> "$S"
  el round $r
done
cat "$S"
