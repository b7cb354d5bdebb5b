#!/usr/bin/env bash
# GPU batch (twenty-fifth session, code of 361cd8c): gpu-f32c8-115.sh found
# v8's f32 rule (eight CTAs, two or three an SM) 2.1–2.2% ahead at 131072 columns but 2–4%
# behind at 98304, 100003, 163840 and 181248: the old shape (two 1024-thread CTAs) dips at
# 131072 alone (3846 against 3984 at 98304 and 3908 at 163840). Is the dip the power of two?
# One round, rule against KERNLAB_V8=f32c8=0, at 2048 rows and widths around 131072.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
B="2048x122880 2048x126976 2048x130048 2048x131072 2048x132096 2048x135168 2048x139264 2048x147456"
bench_points rule "$B" auto
bench_points old "$B" auto f32 KERNLAB_V8=f32c8=0
el round
cat "$S"
