#!/usr/bin/env bash
# GPU batch (thirtieth session), one call (~2 min): run 139 put the gap on the allocator (PyTorch
# on cudaMallocAsync read 0.4-0.8 µs slower for every call, kernlab's unchanged). Here kernlab's
# buffers come from cuMemAlloc instead of the stream-ordered pool (KERNLAB_ALLOC=malloc, an
# experiment: a branch in CudaDevice::alloc_bytes for this one run, removed after it moved
# nothing; docs/perf-notes.md). Prediction: `auto`'s settled medians fall to its replay's (bf16 32 ~4.3, 128 ~4.6,
# 256 ~5.3, 512 ~6.5; f32 32 ~4.2, 128 ~5.15, 256 ~6.2, 512 ~7.9 µs).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
W="4096x32 4096x128 4096x256 4096x512 8192x4096"
settled_pass M "$W" KERNLAB_ALLOC=malloc
settled_pass P "$W" X=1
settled_pass M2 "$W" KERNLAB_ALLOC=malloc
cat "$S"
