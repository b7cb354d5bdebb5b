#!/usr/bin/env bash
# GPU batch (thirty-third session), one call (~3 min warm): why v8 falls 14% from bf16 2049 to
# 2177 columns (run 159: 2256 / 2374 against 2027 / 2023 GB/s) while v3 rises (2209 / 2107 to
# 2275 / 2169). Both widths give v8 the same launch (64 threads, no shared-memory part, the same
# misalignment cycle: 2049 and 2177 are both 1 mod 8). ncu, one launch each, v8 at 2049 and
# 2177 and v3 at 2177: duration, DRAM and L2 throughput and bytes, occupancy, stalls.
# Prediction: none firm; if a memory effect, DRAM throughput falls at 2177 with the same bytes;
# if the SM side, achieved occupancy or the stall mix moves.
# Then `auto` with --torch at bf16 2305 and 3001 (now v3's band) for the record.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
SEC="--clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --print-details all"
KEYS=' Duration|DRAM Throughput|L2 Hit Rate|L1/TEX Hit|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Block Limit (Registers|Shared Mem|Warps|SM)|Waves Per SM|Warp Cycles Per Issued|Issued Warp Per Scheduler|No Eligible|Stall (Long Scoreboard|Barrier|LG Throttle|Drain|Wait|Short|Math|Not Selected|Selected|No Instruction|Membar|Branch)|Memory Throughput|Block Size|Grid Size'
for c in v8_onchip:2049 v8_onchip:2177 v3_block_regs:2177 v3_block_regs:2049; do
  v=${c%%:*}; w=${c##*:}
  timeout 90 ncu $SEC -k regex:softmax_${v} -c 1 $K bench softmax --dtype bf16 --shape 4096x$w --variants $v --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-$v-$w.txt" 2>&1
  echo "ncu $v $w: $(grep -E "$KEYS" "$OUT/ncu-$v-$w.txt" | awk '{$1=$1};1' | tr '\n' ';' | cut -c1-1500)" >> "$S"
done
el ncu
timeout 200 $K bench softmax --dtype bf16 --shape 4096x2305 --shape 4096x3001 --variants auto --torch --rep-ms 30 --rotate auto --csv "$OUT/torch.csv" > "$OUT/torch.log" 2>&1
echo "torch exit $?" >> "$S"
grep "against PyTorch native\|settled" "$OUT/torch.log" | cut -c1-400 >> "$S"
done_table "$OUT/torch.csv" >> "$S"
el torch
cat "$S"
