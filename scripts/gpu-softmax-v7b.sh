#!/usr/bin/env bash
# GPU batch (issue 5): why v7_stream's time per tile is additive (processing + transfer):
# ncu on v7 and v3, then v7's knobs (no proxy fence, smaller bulk copies, two CTAs an SM).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
row() { grep -E "^│ (v|auto)" "$OUT/b.log" | grep -v variant | awk -v s="$1" -F'┆' '{print s, $1, $3, $6}' >> "$S"; grep -iE "error|fail|panic" "$OUT/b.log" | head -3 >> "$S"; }
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section SchedulerStats"
timeout 120 ncu $SEC -k regex:softmax_v7 -c 1 $K bench softmax --shape 8192x4096 --variants v7_stream --rep-ms 1 --warmup-ms 1 > "$OUT/ncu7.txt" 2>&1
timeout 120 ncu $SEC -k regex:softmax_v3 -c 1 $K bench softmax --shape 8192x4096 --variants v3_block_regs --rep-ms 1 --warmup-ms 1 > "$OUT/ncu3.txt" 2>&1
KERNLAB_V7=part=32 timeout 120 ncu $SEC -k regex:softmax_v7 -c 1 $K bench softmax --shape 2048x131072 --variants v7_stream --rep-ms 1 --warmup-ms 1 > "$OUT/ncu7w.txt" 2>&1
for f in ncu7 ncu3 ncu7w; do echo "$f: $(grep -E ' Duration|DRAM Throughput|Achieved Occupancy|Registers Per' "$OUT/$f.txt" | awk '{print $1,$2,$(NF)}' | tr '\n' ' ')" >> "$S"; done
el ncu
for cfg in "" flags=1 copy=4 copy=1 per_sm=2 per_sm=2,copy=4 tile=64,copy=4 flags=1,copy=4; do
  for s in 8192x4096 2048x131072; do
    KERNLAB_V7=$cfg timeout 60 $K bench softmax --shape $s --dtype f32 --variants v7_stream --rep-ms 20 > "$OUT/b.log" 2>&1; row "[$cfg] $s"
  done
done
el knobs
cat "$S"
