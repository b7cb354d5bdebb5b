#!/usr/bin/env bash
# GPU batch (prepared in the fifteenth session for the next one): where the two largest gaps
# of issue 5's done-means come from, measured before another form is tried.
# (1) v9 at f32 4 Mi / 1 Mi (75% / 83% of the stream): ncu's DRAM throughput, the warps'
#     stalls (is the time in the exchange's spin on the tagged slots, or in the loads?), and
#     the SM's issue activity, for the plain and the ping-pong forms.
# (2) v8's odd-width cost (bf16 4097 at 85% of the stream, 8% of it the peel): instructions,
#     global load/store requests and sectors, L2 sectors, and stalls, v8 at 4096 against 4097,
#     and v3 at 4096.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
SEC="--clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy"
MET="dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum"
pick='Duration|DRAM Throughput|dram__bytes_(read|write).sum |smsp__inst_executed.sum |l1tex__t_(requests|sectors)_pipe_lsu_mem_global_op_(ld|st).sum |lts__t_sectors_op_(read|write).sum |Achieved Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Stall (Long Scoreboard|Barrier|LG Throttle|Drain|Wait|Short|Branch|Membar|Sleeping|Math)'
nc() { local env=$1 dt=$2 shape=$3 v=$4 tag=$5
  env $env timeout 120 ncu $SEC --metrics $MET -k regex:softmax_ -c 1 $K bench softmax --shape $shape --dtype $dt --variants $v --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-$tag.txt" 2>&1
  echo "ncu $tag: $(grep -E "$pick" "$OUT/ncu-$tag.txt" | awk '{$1=$1};1' | tr '\n' ';' | cut -c1-1400)" >> "$S"; }
nc "KERNLAB_V9=pp=1" f32 512x4194304 v9_gridsync v9-4mi-pp
nc "KERNLAB_V9=pp=0" f32 512x4194304 v9_gridsync v9-4mi-plain
nc "KERNLAB_V9=" f32 2048x1048576 v9_gridsync v9-1mi
nc "KERNLAB_V9=" f32 4096x65536 v8_onchip v8-65536
el v9
nc "KERNLAB_V9=" bf16 4096x4097 v8_onchip v8-4097
nc "KERNLAB_V9=" bf16 4096x4096 v8_onchip v8-4096
nc "KERNLAB_V9=" bf16 4096x4096 v3_block_regs v3-4096
el odd
cat "$S"
