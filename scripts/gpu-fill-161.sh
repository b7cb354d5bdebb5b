#!/usr/bin/env bash
# GPU batch (thirty-third session), one call (~4 min warm): run 160's ncu found why v8 falls
# 14% from bf16 2049 to 2177 columns: at 2049 its row (256 packs at most) fits 32 threads of
# eight packs, 32 CTAs an SM, all 4096 rows in one wave (0.97); at 2177 (272 packs) it takes 64
# threads, so 16 CTAs an SM (64 registers a thread) and two waves, with the threads half
# filled: about half the bytes in flight an SM. v8's fill form (KERNLAB_V8=fill=1, v8_fill_cta:
# the CTA that puts the most rows on an SM, the rest of the row in shared memory) takes 32
# threads and 16 packs in shared memory at 2177. It lost at bf16 4097 in the tenth session
# (2930 -> 2506), before v8's later changes.
# Prediction: fill=1 lifts v8 at 16-bit 2177-3457 toward the 2049 trend (+10-15%), above v3's
# band figures; at 4097 and past it less (three waves become two).
# Two rounds in bf16, one in f16, one in f32; v8, v8 fill=1, and v3; 4096 rows.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
W="4096x1537 4096x2177 4096x2433 4096x3001 4096x3457 4096x3585 4096x4097 4096x5121 4096x6145 4096x8193 4096x12345"
for r in 1 2; do
  bench_points v8r$r "$W" v8_onchip bf16
  bench_points flr$r "$W" v8_onchip bf16 KERNLAB_V8=fill=1
  bench_points v3r$r "$W" v3_block_regs bf16
  el "bf16 round $r"
done
bench_points v8h "$W" v8_onchip f16
bench_points flh "$W" v8_onchip f16 KERNLAB_V8=fill=1
bench_points v8f "$W" v8_onchip f32
bench_points flf "$W" v8_onchip f32 KERNLAB_V8=fill=1
el "f16 f32"
cat "$S"
