#!/usr/bin/env bash
# GPU batch (thirty-first session), one call (~4 min on a warm machine): v3's shifted form
# (odd widths keep 16-byte packs aligned to memory, each row's first and last lane by lane).
# 1. The softmax GPU tests that run v3 on odd widths: every variant on the awkward shapes
#    (781, 1025, 4097, 33, 255… at 1 and 3 rows), special values, large logits, log_softmax,
#    and the output-stride test (x and y rows alike misaligned at another stride).
# 2. v3 (now shifted at odd widths) against v8_onchip (auto's pick there on sm_90) at odd
#    widths, bf16 and f32, 4096 rows, validated then timed; v3 at the aligned width beside.
# Prediction: the tests pass; bf16 4097 v3 toward v3's own 4096 (~3200 GB/s) against v8's ~2940;
# f32 4097 ~3750 against ~3650; from 12345 on, v8 level or ahead (v3 at four or eight slots a
# thread ran 16-bit rows past 16384 slowly, twelfth session).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 150 .gpu/tests/tests-* --test-threads=1 \
  ops::softmax_matches_reference_on_awkward_shapes::cuda ops::softmax_special_values_follow_pytorch::cuda \
  ops::softmax_large_logits_match_the_reference::cuda ops::log_softmax_matches_reference::cuda \
  ops::softmax_cuda_writes_rows_at_the_output_stride > "$OUT/tests.log" 2>&1
echo "tests: exit $? $(grep -c '\.\.\. ok' "$OUT/tests.log") ok" >> "$S"
grep -E "^test .*FAILED|panicked" "$OUT/tests.log" | head -5 | cut -c1-300 >> "$S"
el tests
bench_points b16 "4096x1025 4096x3001 4096x4096 4096x4097 4096x8193 4096x12345 4096x16385" v3_block_regs,v8_onchip bf16
el b16
bench_points f32 "4096x1025 4096x4096 4096x4097 4096x8193 4096x12345 4096x16385" v3_block_regs,v8_onchip f32
el f32
