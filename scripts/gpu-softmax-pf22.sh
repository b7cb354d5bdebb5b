#!/usr/bin/env bash
# GPU batch (eighth session): (1) v8 f32 ran ~5% slower in gpu-check21 than in the seventh
# session's sweeps; A/B the build before the OnchipPart refactor (.gpu/old/kernlab, b1b5363)
# against this one, interleaved. (2) v9 with the next row's shared-memory part prefetched
# during the current row's exchange and write (KERNLAB_V9=prefetch=1) against without.
# (3) compute-sanitizer racecheck/memcheck over v9, both forms, at shapes whose groups take
# several rows (so the prefetch and the buffer alternation run).
# (Ran on a build with the prefetching form; it was slower and removed, so KERNLAB_V9=prefetch no
# longer exists: docs/perf-notes.md, eighth session, has the design and the numbers.)
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
for rep in 1 2; do
  for b in old new; do
    bin=$K; [ $b = old ] && bin=.gpu/old/kernlab
    timeout 60 $bin sweep softmax --rows 4096 --cols 131072,262144,524288 --max-elements 2^28 --dtype f32,bf16 --variants v8_onchip --rep-ms 15 --warmup-ms 5 --csv "$OUT/ab.csv" > "$OUT/ab-$b.log" 2>&1
    echo "v8 $b: $(tab "$OUT/ab.csv")" >> "$S"
  done
done
el ab
for pf in 0 1; do
  env KERNLAB_V9=prefetch=$pf timeout 100 $K sweep softmax --rows 4096 --cols 262144..4194304:x2,1048577 --max-elements 2^28 --dtype f32,bf16 --variants v9_gridsync --rep-ms 15 --warmup-ms 5 --csv "$OUT/pf$pf.csv" > "$OUT/pf$pf.log" 2>&1
  echo "v9 prefetch=$pf: $(tab "$OUT/pf$pf.csv")" >> "$S"
done
el pf
for pf in 1 0; do for tool in racecheck memcheck; do
  env KERNLAB_V9=prefetch=$pf timeout 100 compute-sanitizer --tool $tool $K bench softmax --shape 300x65537 --shape 200x131072 --shape 3x1048577 --dtype f32,bf16 --variants v9_gridsync --rep-ms 1 --warmup-ms 1 > "$OUT/$tool$pf.log" 2>&1
  echo "pf=$pf $tool exit $?: $(grep -E 'SUMMARY' "$OUT/$tool$pf.log" | tr '\n' ' ')" >> "$S"
  grep -iE "error|fail|invalid|refused" "$OUT/$tool$pf.log" | head -3 | cut -c1-200 >> "$S"
  el $tool
done; done
cat "$S"
