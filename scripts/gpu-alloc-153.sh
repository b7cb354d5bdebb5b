#!/usr/bin/env bash
# GPU batch (thirty-second session), one call (~4 min): where kernlab's buffers come from, the
# one difference between the two processes that run 140 left open. Run 139: PyTorch's calls
# read 0.5-0.8 µs higher on its cudaMallocAsync backend than on its caching allocator, which
# gets its memory from cudaMalloc in segments of 2 MiB and up. Run 140: kernlab's buffers from
# cuMemAlloc at their own sizes (256 KiB at bf16 4096x32) moved nothing. Here
# KERNLAB_ALLOC=malloc2m (cuMemAlloc rounded up to 2 MiB) and pool2m (the pool, likewise)
# against the default pool, interleaved, both with the replay of the same launch in
# PyTorch's process as the control. Prediction: if the page size of small buffers is the
# cause, malloc2m (and perhaps pool2m) falls to the replay's settled medians (bf16 32 ~4.3,
# 128 ~4.6, 256 ~5.3, 512 ~6.5; f32 32 ~4.2, 128 ~5.15, 256 ~6.2, 512 ~7.9 µs) and the default
# stays 0.2-0.7 above; otherwise all three read alike.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
W="4096x32 4096x128 4096x256 4096x512 4096x1024"
settled_pass M "$W" KERNLAB_ALLOC=malloc2m
settled_pass P "$W" X=1
settled_pass Q "$W" KERNLAB_ALLOC=pool2m
settled_pass M2 "$W" KERNLAB_ALLOC=malloc2m
settled_pass P2 "$W" X=1
cat "$S"
