#!/usr/bin/env bash
# GPU batch (twelfth session): every GPU test on the new L2 flush (a write at evict_last
# priority, then demoted), then the flush's effect on `auto`: do_bench's plain write
# (KERNLAB_FLUSH=write) against the new flush, against no flush with 32 rotated inputs, and
# the new flush with plain row loads (KL_ROW_LOAD_HINT=0), interleaved twice. Needs 657b500's
# build: the flush and KERNLAB_FLUSH were reverted after this run (9cd6f13).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
gpu_tests 330
el tests
for rep in 1 2; do
  for m in write policy rotate plain; do
    e=(env); a=(--rep-ms 15 --warmup-ms 5)
    case $m in
      write) e+=(KERNLAB_FLUSH=write) ;;
      rotate) a+=(--no-flush --rotate 32) ;;
      plain) e+=(KERNLAB_NVRTC_DEFINES=KL_ROW_LOAD_HINT=0) ;;
    esac
    timeout 100 "${e[@]}" $K sweep softmax --rows 4096 --cols 256,1024,2048,4096,16384 --dtype f32,bf16 --variants auto "${a[@]}" --csv "$OUT/f.csv" > "$OUT/f-$m.log" 2>&1
    echo "$m: $(tab "$OUT/f.csv")" >> "$S"
  done
done
grep -m1 "flushed" "$OUT/f-policy.log" | cut -c1-300 >> "$S"
el flush
cat "$S"
