#!/usr/bin/env bash
# GPU batch (thirty-fifth session), one call: v11_deal, new (its first form, warps sharing each
# chunk; runs 171-172 changed the kernel, docs/perf-notes.md). Its GPU test (every chunk size,
# two and three slots a CTA, three launches a shape, log_softmax) and the split-row test that
# runs every split-row version; then the wide TARGETS shapes against auto, two rounds.
# Prediction: if v9's and v8's loss at wide rows is the even split waiting on the SMs that
# stream 37% slower (twenty-fourth session), dealing chunks on demand takes f32 256×1 Mi from
# ~3500 toward the stream (~4150) and 1024×131072 from ~3860 past 3900; bf16 gains less (its
# two exponentials an element load the MUFU near its limit at 4 TB/s).
# Every point is validated against the f64 reference before it is timed (bench).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
gpu_tests 150 v11 softmax_v11
el "v11 test"
gpu_tests 150 split softmax_split_rows
el "split test"
F="1024x131072 256x1048576 64x4194304 4096x32768 2048x65537"
B="1024x131072 256x1048576 128x2097152"
for r in 1 2; do
  bench_points a$r "$F" auto f32
  bench_points d$r "$F" v11_deal f32
  bench_points d8$r "$F" v11_deal f32 KERNLAB_V11=chunk=8
  bench_points d32$r "$F" v11_deal f32 KERNLAB_V11=chunk=32
  bench_points ab$r "$B" auto bf16
  bench_points db$r "$B" v11_deal bf16
  el "round $r"
done
cat "$S"
