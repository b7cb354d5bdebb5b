#!/usr/bin/env bash
# GPU batch (twenty-fifth session, code of the commit that adds v8's f32 rule, v8_f32_cluster):
# f32 rows of two CTAs' packs (90625–181248 columns) run as eight CTAs sized for the most an
# SM, after gpu-tail-114.sh measured that shape (KERNLAB_V8=cluster=8,fill=1) 1.1–1.9% ahead
# of the default at 131072 in 8 of 8 pairs. The softmax GPU tests, then one process a
# setting, the rule against KERNLAB_V8=f32c8=0 (the old shape), interleaved twice, at 2048
# rows across the band and at 1024 and 4096 rows at 131072. Every point validated first.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 220 softmax softmax
el tests
B="2048x90625 2048x98304 2048x100003 2048x131072 2048x163840 2048x181248 1024x131072 4096x131072"
for r in 1 2; do
  bench_points rule-$r "$B" auto
  bench_points old-$r "$B" auto f32 KERNLAB_V8=f32c8=0
  el round $r
done
cat "$S"
