#!/usr/bin/env bash
# GPU batch (fourteenth session): the new workspaces test and the softmax tests (v8's launch
# shape moved into v8_shape); then where the odd widths lose against the stream. bf16 4097
# ran at 2775 GB/s against the stream's 3183, bf16 12345 3541 / 3859 (twelfth session). Is it
# v8's peel (scalar head and tail) or v8's shape (64 threads × 8 packs where v3 runs 128 × 4)?
# v8 at the aligned width next to it isolates the peel; v3 there, the shape. ncu: DRAM bytes
# (extra traffic from partial sectors?), occupancy, stalls. Rotated bench, validated first.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 60 workspaces
gpu_tests 200 softmax
el tests
sw() { timeout "$1" $K sweep softmax --rows 4096 --cols "$2" --dtype "$3" --variants "$4" --rep-ms 20 --rotate auto --csv "$OUT/$5.csv" > "$OUT/$5.log" 2>&1; echo "$5 exit $? $(vtab "$OUT/$5.csv")" >> "$S"; }
sw 60 4096,4097,12288,12345,16384,16385 bf16 v3_block_regs,v8_onchip,auto b
sw 60 4096,4097,12288,12345 f32 v3_block_regs,v8_onchip,auto f
el bench
SEC="--clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active"
nc() { timeout 60 ncu $SEC -k regex:softmax_ -c 1 $K bench softmax --shape 4096x$2 --dtype $1 --variants $3 --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-$1-$2-$3.txt" 2>&1
  echo "ncu $1 $2 $3: $(grep -E ' Duration|DRAM Throughput|dram__bytes_(read|write).sum |Achieved Occupancy|Registers Per|Block Limit (Registers|Shared|Warps|SM)|Warp Cycles Per Issued|Stall (Long Scoreboard|Barrier|LG Throttle|Drain|Wait|Short)' "$OUT/ncu-$1-$2-$3.txt" | awk '{$1=$1};1' | tr '\n' ';' | cut -c1-1000)" >> "$S"; }
nc bf16 4097 v8_onchip; nc bf16 4096 v8_onchip; nc bf16 4096 v3_block_regs
nc bf16 12345 v8_onchip; nc bf16 12288 v3_block_regs
el ncu
cat "$S"
