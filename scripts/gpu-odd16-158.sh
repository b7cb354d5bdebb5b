#!/usr/bin/env bash
# GPU batch (thirty-third session), one call (~3 min warm): where, among 16-bit odd widths past
# 1017 columns (v8's in `auto`), v3's split shifted load (KL_V3_SHIFT_SPLIT=1, off by default)
# leads v8. Runs 155-156 had it ahead only at 3001 (5-10%), where v8's 376 packs take 64
# threads (a warp's multiple of ceil(packs / 8)), 5-6 packs a thread; at 2049 and 2305 (257
# and 289 packs) v8 takes 64 threads too, 4-5 packs a thread, against v3's 96 (K = 4).
# Prediction: if v8's few packs a thread at these widths are the cause, split v3 leads at
# 2049-3001 by 5-10% and trails from 3585 (v8's threads near 8 packs each), as at 4097-12345
# in runs 155-156.
# Beside them v8 with 128 threads a CTA (KERNLAB_V8=cluster=1,threads=128: 2-4 packs a thread
# at these widths): if packs a thread are the cause, it gains where split v3 leads.
# Two rounds in bf16, one in f16; v8, v8 at 128 threads, v3 as it is, and v3 split; 4096 rows.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
W="4096x1537 4096x2049 4096x2305 4096x2561 4096x3001 4096x3329 4096x3585 4096x4097 4096x5121 4096x6145 4096x8193"
for r in 1 2; do
  bench_points v8r$r "$W" v8_onchip bf16
  bench_points v8t$r "$W" v8_onchip bf16 KERNLAB_V8=cluster=1,threads=128
  bench_points v3r$r "$W" v3_block_regs bf16
  bench_points spr$r "$W" v3_block_regs bf16 KERNLAB_NVRTC_DEFINES=KL_V3_SHIFT_SPLIT=1
  el "bf16 round $r"
done
bench_points v8h "$W" v8_onchip f16
bench_points sph "$W" v3_block_regs f16 KERNLAB_NVRTC_DEFINES=KL_V3_SHIFT_SPLIT=1
el f16
cat "$S"
