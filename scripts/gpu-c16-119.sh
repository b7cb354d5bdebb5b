#!/usr/bin/env bash
# GPU batch (twenty-fifth session, code of 52bfd02): run 114 fitted ~9 µs a call of start and
# drain at f32 ×131072 (about half a row's time on its two SMs), 3% of TARGETS.md's 1024-row
# call. A row spread over four SMs, not two, halves that time: clusters of 16 CTAs of 256
# threads, four an SM (KERNLAB_V8=cluster=16,threads=256, new), against the default (v8's f32
# rule: 8 such CTAs, a row on two SMs). One process a setting, interleaved; points validated
# first.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
B="1024x131072 2048x131072 2048x147456"
for r in 1 2; do
  bench_points rule-$r "$B" auto
  bench_points c16-$r "$B" v8_onchip f32 KERNLAB_V8=cluster=16,threads=256
  el round $r
done
cat "$S"
