#!/usr/bin/env bash
# GPU batch (twenty-fifth session, code of 0847574): v8's f32 rule (eight 256-thread CTAs, four
# an SM) now only from a share of 3840 packs (122880 columns; run 117 had it 3.7–6.6% behind at
# 98304 and 100003). The split-row softmax GPU tests (an odd width under the rule, 150001, and
# one below it), then one round, the rule against KERNLAB_V8=f32c8=0, at odd widths in the band
# and the TARGETS shape.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 150 split softmax_split_rows
el tests
B="2048x122881 2048x150001 2048x175003 1024x131072 4096x131072"
bench_points rule "$B" auto
bench_points old "$B" auto f32 KERNLAB_V8=f32c8=0
el round
cat "$S"
