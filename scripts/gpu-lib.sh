# Sourced by the GPU batch scripts (run from the repository root on the GPU machine):
# $OUT (files that come back), the kernel cache, $K (the kernlab binary), $S (the summary
# file printed last) and `el`, which appends the seconds since the start and a label to $S.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
S="$OUT/summary.txt"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$S"; }
