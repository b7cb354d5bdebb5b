#!/usr/bin/env bash
# GPU batch (eleventh session): f32 softmax in v2/v3 keeping e^(x − m) from the sum for the
# write (.gpu, the new build) against computing it again (.gpu-base/kernlab, the build before),
# auto at f32 widths v2 and v3 take, interleaved twice; then the whole GPU test suite.
# (Ran with the kept-terms build in .gpu and the one before in .gpu-base; the kept terms
# measured no faster and were removed: docs/perf-notes.md, eleventh session.)
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
W=32,33,64,128,255,256,384,511,512,1024,2048,4096,8192,16384,32768
for rep in 1 2; do
  for b in base new; do
    bin=$K; [ $b = base ] && bin=.gpu-base/kernlab
    KERNLAB_CACHE_DIR=/tmp/kc-$b timeout 100 $bin sweep softmax --rows 4096 --cols $W --dtype f32 --variants auto --rep-ms 10 --warmup-ms 4 --csv "$OUT/$b.csv" > "$OUT/$b-$rep.log" 2>&1
    echo "$b: $(tab "$OUT/$b.csv")" >> "$S"
  done
done
el ab
gpu_tests 420
el tests
cat "$S"
