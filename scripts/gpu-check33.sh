#!/usr/bin/env bash
# GPU batch (ninth session, last): the softmax tests (v9's two forms now also run forced at
# every split-row shape; the PTX test counts the ping-pong form's polls) and the cache tests
# (kernlab's cache folder now holds kernels/ beside ceilings.json and autotune.json).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
for f in softmax cache; do
  gpu_tests 200 $f
  el $f
done
ls /tmp/kernlab-cache >> "$S" 2>&1
cat "$S"
