#!/usr/bin/env bash
# GPU batch (eleventh session): L2 eviction hints on the 16-byte loads and stores
# (KERNLAB_NVRTC_DEFINES=KL_LD_HINT=1|2, KL_ST_HINT=1|2|3: evict_last, evict_first, .cs)
# against none, auto at the widths where torch.compile leads v3 (f32 8192/16384) and wider,
# interleaved twice; torch.compile and native beside them at f32 8192/16384.
# (Ran on a build where KL_LD_HINT and KL_ST_HINT set the policy of every ld16/st16. They
# are gone: evict_last loads were kept on the on-chip rows' loads only, where
# KL_ROW_LOAD_HINT=0|1|2 sets them: docs/perf-notes.md, eleventh session.)
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
for rep in 1 2; do
  for d in none KL_LD_HINT=1 KL_LD_HINT=2 KL_ST_HINT=1 KL_ST_HINT=2 KL_ST_HINT=3 KL_LD_HINT=1,KL_ST_HINT=3; do
    dd=$d; [ $d = none ] && dd=
    KERNLAB_NVRTC_DEFINES=$dd timeout 100 $K sweep softmax --rows 4096 --cols 4096,8192,16384,32768,131072 --max-elements 2^28 --dtype f32 --variants auto --rep-ms 20 --warmup-ms 5 --csv "$OUT/h.csv" > "$OUT/h.log" 2>&1
    echo "f32 $d: $(tab "$OUT/h.csv")" >> "$S"
    KERNLAB_NVRTC_DEFINES=$dd timeout 100 $K sweep softmax --rows 4096 --cols 16384,32768 --dtype bf16 --variants auto --rep-ms 20 --warmup-ms 5 --csv "$OUT/h.csv" > "$OUT/h.log" 2>&1
    echo "bf16 $d: $(tab "$OUT/h.csv")" >> "$S"
  done
done
el hints
timeout 150 python3 baselines/torch_baselines.py --op softmax --shapes 4096x8192,4096x16384 --dtype f32 --variants torch_native,torch_compile --rep-ms 20 --json "$OUT/torch.json" --quiet > "$OUT/torch.log" 2>&1
echo "torch: $(ttab "$OUT/torch.json" 2>&1)" >> "$S"
el torch
cat "$S"
