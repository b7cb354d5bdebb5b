#!/usr/bin/env bash
# GPU batch (twenty-fifth session, code of a1fafb9, which makes v8's f32 rule four 256-thread
# CTAs an SM): runs 115 and 116 found the first form of the rule (eight CTAs sized by
# v8_fill_cta) ahead only where that sized them four an SM (122880–131072 columns: +0.3% to
# +2.2%), and 2–7% behind at three or five an SM (a cluster of eight then spans three SMs) or
# two. The rule now always takes four 256-thread CTAs an SM, to 179200 columns. The softmax
# GPU tests, then one round, the rule against KERNLAB_V8=f32c8=0, across the band.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 220 softmax softmax
el tests
B="2048x90625 2048x98304 2048x100003 2048x131072 2048x132096 2048x147456 2048x163840 2048x179200 1024x131072"
bench_points rule "$B" auto
bench_points old "$B" auto f32 KERNLAB_V8=f32c8=0
el round
cat "$S"
