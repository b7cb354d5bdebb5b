#!/usr/bin/env bash
# GPU batch (ninth session, last): the softmax tests (v9's two forms now also run forced at
# every split-row shape; the PTX test counts the ping-pong form's polls) and the cache tests
# (kernlab's cache folder now holds kernels/ beside ceilings.json and autotune.json).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
for f in softmax cache; do
  KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 200 .gpu/run-tests $f > "$OUT/tests-$f.log" 2>&1
  echo "run-tests $f: exit $? $(grep -E '^test result' "$OUT/tests-$f.log" | awk '{p+=$4; f+=$6} END {print p" passed "f" failed"}')" >> "$S"
  grep -E "^test .*FAILED|panicked" "$OUT/tests-$f.log" | head -5 | cut -c1-300 >> "$S"
  el $f
done
ls /tmp/kernlab-cache >> "$S" 2>&1
cat "$S"
