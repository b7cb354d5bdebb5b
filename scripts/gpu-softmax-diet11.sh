#!/usr/bin/env bash
# GPU batch (fifth session): the softmax tests with KERNLAB_REQUIRE_GPU=1 after the 16-bit
# instruction diet (packed max, FMA-folded exponent, two-pass per-thread (max, sum)) and the
# 40-register bound of v3's 16-bit K = 4 kernels; then v3/v5/v6/auto over the medium and
# wide widths (prefetch off), and v3 with prefetch on for bf16.
# Its KERNLAB_SOFTMAX_PREFETCH sweep needs the uncommitted prefetch build (see
# gpu-softmax-pf10.sh); with the committed kernels that variable does nothing.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 90 .gpu/run-tests softmax > "$OUT/tests.log" 2>&1; echo "softmax tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | grep -v " 0 passed" | head -8 >> "$S"
el tests
timeout 200 $K sweep softmax --rows 4096 --cols 4096,8192,16384,32768,65536,131072,1048576,4194304 --max-elements 2^28 --dtype f32,bf16 --variants v3_block_regs,v5_cluster,v6_split,auto --rep-ms 15 --warmup-ms 10 --csv "$OUT/pf0.csv" > "$OUT/pf0.log" 2>&1; echo "sweep pf=0 exit $?" >> "$S"
el sweep0
KERNLAB_SOFTMAX_PREFETCH=v3=1 timeout 60 $K sweep softmax --rows 4096 --cols 4096,8192,16384,32768,65536 --dtype bf16,f16 --variants v3_block_regs --rep-ms 15 --warmup-ms 10 --csv "$OUT/pf1.csv" > "$OUT/pf1.log" 2>&1; echo "sweep pf=1 exit $?" >> "$S"
el sweep1
timeout 60 $K sweep softmax --rows 4096 --cols 4096,8192,16384,32768,65536 --dtype f16 --variants v3_block_regs --rep-ms 15 --warmup-ms 10 --csv "$OUT/f16.csv" > "$OUT/f16.log" 2>&1; echo "sweep f16 exit $?" >> "$S"
el sweepf16
python3 - "$OUT" >> "$S" <<'PY'
import csv, sys, os
out = sys.argv[1]
t = {}
for m in ["pf0", "f16", "pf1"]:
    p = os.path.join(out, f"{m}.csv")
    if not os.path.exists(p): continue
    for r in csv.DictReader(open(p)):
        if r["status"] == "ok":
            key = m if m != "f16" else "pf0"
            t.setdefault((r["dtype"], int(r["cols"]), r["variant"]), {})[key] = float(r["gbps"])
            if r["variant"] == "auto": t[(r["dtype"], int(r["cols"]), r["variant"])]["note"] = r["note"]
print("dtype cols variant pf0 pf1")
for k in sorted(t):
    print(*k, f"{t[k].get('pf0', 0):.0f}", f"{t[k].get('pf1', 0):.0f}", t[k].get("note", ""))
PY
cat "$S"
