# Sourced by the GPU batch scripts (run from the repository root on the GPU machine):
# $OUT (files that come back), the kernel cache, $K (the kernlab binary), $S (the summary
# file printed last), `el`, which appends the seconds since the start and a label to $S, and
# `tab` (below).
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
S="$OUT/summary.txt"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$S"; }
# `tab CSV`: one line of a bench/sweep CSV's points, dtype:cols=GB/s (or the status when not ok).
tab() { python3 -c "
import csv,sys
print(*[r['dtype']+':'+r['cols']+'='+(str(round(float(r['gbps']))) if r['status']=='ok' else r['status'][:12]) for r in csv.DictReader(open('$1'))])"; }
