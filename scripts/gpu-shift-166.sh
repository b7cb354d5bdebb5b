#!/usr/bin/env bash
# GPU batch (thirty-fourth session), one call (~3 min warm): where v3's shifted 16-bit row loses
# its ~7% against an aligned row of the same block (run 154: bf16 4104, aligned, 513 packs, 160
# threads, 3081-3099 GB/s; 4097, shifted, the same 160 threads, ~2800-2900; 4096, 128 threads,
# 3144-3246). ncu, one launch each, v3 at bf16 4096, 4104 and 4097 (4096 rows): duration, DRAM
# bytes and throughput, occupancy, instructions, stalls; then the three in bench, two rounds.
# Prediction: 4097 moves the same DRAM bytes as 4104 (to within the rows' boundary sectors,
# under 1%) at the same occupancy, and executes 10-20% more instructions (the split's partial
# packs, masked reductions and element-wise stores at each end), with more long-scoreboard
# stalls (its partial packs loaded after the whole ones). If instead 4097's DRAM bytes or its
# write sectors exceed 4104's by more than the boundaries, partial-sector writes are the cost.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
SEC="--clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum --print-details all"
KEYS=' Duration|DRAM Throughput|dram__bytes|lts__t_sectors|smsp__inst_executed.sum|l1tex__t_(requests|sectors)|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Block Limit (Registers|Warps)|Warp Cycles Per Issued|No Eligible|Stall (Long Scoreboard|Barrier|LG Throttle|Drain|Wait|Short|Math|Not Selected|Selected|No Instruction|Branch)|Block Size'
for w in 4096 4104 4097; do
  timeout 90 ncu $SEC -k regex:softmax_v3 -c 1 $K bench softmax --dtype bf16 --shape 4096x$w --variants v3_block_regs --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-v3-$w.txt" 2>&1
  echo "ncu v3 $w: $(grep -E "$KEYS" "$OUT/ncu-v3-$w.txt" | awk '{$1=$1};1' | tr '\n' ';' | cut -c1-1800)" >> "$S"
done
el ncu
for r in 1 2; do bench_points b$r "4096x4096 4096x4104 4096x4097" v3_block_regs,v8_onchip bf16; done
el bench
cat "$S"
