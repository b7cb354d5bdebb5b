#!/usr/bin/env bash
# GPU batch: issue 3's sweep, exactly as docs/softmax.md quotes it.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
start=$(date +%s)
timeout 560 $K sweep softmax --rows 4096 --cols 256..12672:128 --torch \
  --plot "$OUT/softmax-sweep-4096rows-full.svg" --json "$OUT/sweep.json" --csv "$OUT/sweep.csv" \
  > "$OUT/sweep.txt" 2> "$OUT/sweep.err"
echo "sweep exit $? in $(( $(date +%s) - start )) s"
$K sweep softmax --help >/dev/null 2>&1
tail -3 "$OUT/sweep.err"; grep -E "copy|^│" "$OUT/sweep.txt" | cut -c1-200 | head -12
