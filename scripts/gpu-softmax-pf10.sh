#!/usr/bin/env bash
# GPU batch (fifth session): every test with KERNLAB_REQUIRE_GPU=1 (this also runs the
# fourth session's unverified guards), the softmax tests again with L2 prefetch on in v3 and
# v6, then v3/v6 with prefetch off (0), prefetch.global.L2 (1) and its evict_last form (2).
# The prefetch (KERNLAB_SOFTMAX_PREFETCH, a `pf` kernel argument of v3 and v6) was measured
# slower and removed before it was committed: this script needs that uncommitted build.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
PHASE=${1:-all}
if [ "$PHASE" = all ]; then
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 240 .gpu/run-tests > "$OUT/tests.log" 2>&1; echo "run-tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | head -12 >> "$S"
el tests
KERNLAB_SOFTMAX_PREFETCH=v3=1,v6=2 KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 60 .gpu/run-tests softmax > "$OUT/tests-pf.log" 2>&1; echo "softmax tests with prefetch exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests-pf.log" | grep -v " 0 passed" | head -6 >> "$S"
el tests-pf
fi
COLS=${COLS:-4096,8192,16384,32768,65536,131072,1048576,4194304}
for m in ${MODES:-1 0}; do
  KERNLAB_SOFTMAX_PREFETCH=v3=$m,v6=$m timeout ${TSWEEP:-110} $K sweep softmax --rows 4096 --cols $COLS --max-elements 2^28 --dtype f32,bf16 --variants v3_block_regs,v6_split --rep-ms 15 --warmup-ms 10 --csv "$OUT/pf$m.csv" > "$OUT/pf$m.log" 2>&1; echo "sweep pf=$m exit $?" >> "$S"
  el "sweep pf=$m"
done
python3 - "$OUT" ${MODES:-1 0} >> "$S" <<'PY'
import csv, sys, os
out, modes = sys.argv[1], sys.argv[2:]
t = {}
for m in modes:
    p = os.path.join(out, f"pf{m}.csv")
    if not os.path.exists(p): continue
    for r in csv.DictReader(open(p)):
        if r["status"] == "ok":
            t.setdefault((r["dtype"], int(r["cols"]), r["variant"]), {})[m] = float(r["gbps"])
print("dtype cols variant " + " ".join(f"pf{m}" for m in modes))
for k in sorted(t):
    print(*k, *[f"{t[k].get(m, 0):.0f}" for m in modes])
PY
cat "$S"
