#!/usr/bin/env bash
# GPU batch (thirty-fifth session), one call: v11_deal after run 171 (warps a chunk each:
# 3.1-3.8 TB/s at f32 131072-1 Mi, but 1.7 at 4 Mi). Two changes: the warp that completes a
# row reads its chunk states 16 loads a lane at a time (it had polled them one after another,
# 32 round trips a lane at 4 Mi in 16 KB chunks), and the producer claims every free slot it
# finds (up to 4) with one atomicAdd. Prediction: 4 Mi back to at least run 170's 3100-3500,
# 1 Mi from 3100 to 3600+, 131072 from 3660 toward 3900.
# Every point is validated against the f64 reference before it is timed (bench).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
gpu_tests 150 v11 softmax_v11
el "v11 test"
F="1024x131072 256x1048576 64x4194304 4096x32768 2048x65537"
B="1024x131072 256x1048576 128x2097152"
bench_points a1 "$F" auto f32
bench_points d1 "$F" v11_deal f32
bench_points d321 "$F" v11_deal f32 KERNLAB_V11=chunk=32
bench_points ab1 "$B" auto bf16
bench_points db1 "$B" v11_deal bf16
bench_points d32b1 "$B" v11_deal bf16 KERNLAB_V11=chunk=32
el "round 1"
cat "$S"
