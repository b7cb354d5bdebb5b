#!/usr/bin/env bash
# GPU batch (twenty-seventh session; written for the next lease, which never came this session):
# (1) The replay's GPU test, now also asserting the verdict under the table
# (kernlab_do_bench_replays_auto_in_pytorch_s_process), and the real baselines script's (its new
# host-bound check runs after every timing; the sweep's host-bound records are listed). (2) The bf16 done-means sweep again
# (gpu-done-120.sh bf16's command): run 126 gave kernlab_do_bench 28-446 GB/s at 32-256 columns,
# Python-bound calls in a process where compile's were too; the replay's launch is now one ctypes
# call (DriverKernel.launcher). Prediction: the same-process column within ~0.5 µs of `auto` at
# every point, never tens of µs. (3) compile led the same-process column at f32 256 and 512 (runs
# 124 r2 and 125) while ncu (caches invalidated) had our kernel faster: v2's evict_last row loads
# (lines that outlive do_bench's flush) or its 128-thread CTAs (Inductor's are one warp)? The
# µs-sized widths under four settings of v2, one process each, µs a call. Prediction: if the
# hint is it, plain loads (hint 0) bring the same-process column level with compile at f32 256
# and 512; if the CTA size is it, 32 threads does.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 200 kernlab_do_bench kernlab_do_bench
gpu_tests 200 baselines real_baselines_script
el tests
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
DT=bf16
done_sweep "$DT" 300
el sweep
grep -m1 -i "copy ceiling" "$OUT/sweep.log" | cut -c1-200 >> "$S"
grep -m1 "kernlab_do_bench:" "$OUT/sweep.log" | cut -c1-240 >> "$S"
grep "against PyTorch native" "$OUT/sweep.log" | cut -c1-600 >> "$S"
python3 -c "
import csv
for r in csv.DictReader(open('$OUT/softmax-sweep-done-$DT.csv')):
    if 'host-bound' in (r['note'] or ''): print('host-bound:', r['variant'], r['cols'], r['median_ms'])" >> "$S"
done_table "$OUT/softmax-sweep-done-$DT.csv" >> "$S"
for cfg in "1 128" "0 128" "2 128" "1 32"; do
  set -- $cfg
  KERNLAB_NVRTC_DEFINES=KL_ROW_LOAD_HINT=$1 KERNLAB_V2=threads=$2 timeout 90 $K bench softmax --shape 4096x32 --shape 4096x64 --shape 4096x256 --shape 4096x512 --shape 4096x1024 --dtype f32,bf16 --variants auto --torch --rotate auto --rep-ms 30 --csv "$OUT/hint$1-t$2.csv" > "$OUT/hint$1-t$2.log" 2>&1
  echo "hint $1 threads $2 exit $?" >> "$S"; ustab "$OUT/hint$1-t$2.csv" >> "$S"; el "hint $1 threads $2"
done
cat "$S"
