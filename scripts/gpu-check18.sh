#!/usr/bin/env bash
# GPU batch (seventh session, first): every test with KERNLAB_REQUIRE_GPU=1 on the build with the
# shared launch helpers (allow_dynamic_smem, launch_rows_cluster) and the common.cuh cp.async /
# RowRegs refactors, none of which had run on the GPU; then softmax v3/v7/v8/auto and the sm_90
# GEMMs at a few shapes, to see that the refactors kept the speed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 300 .gpu/run-tests > "$OUT/tests.log" 2>&1; echo "run-tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | grep -v " 0 passed" | head -16 >> "$S"
el tests
timeout 110 $K sweep softmax --rows 4096 --cols 4097,32768,131072,1048576 --max-elements 2^28 --dtype f32,bf16 --variants v3_block_regs,v6_split,v7_stream,v8_onchip,auto --rep-ms 15 --warmup-ms 10 --csv "$OUT/q.csv" > "$OUT/q.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
timeout 90 $K bench matmul --shape 8192x8192x8192 --dtype bf16 --variants v6_wgmma,v7_wgmma_tma_store,cublas > "$OUT/mm.txt" 2>&1; echo "matmul exit $?" >> "$S"
el matmul
python3 - "$OUT/q.csv" >> "$S" <<'PY'
import csv, sys
t = {}
for r in csv.DictReader(open(sys.argv[1])):
    t.setdefault((r["dtype"], int(r["cols"])), {})[r["variant"]] = f'{float(r["gbps"]):.0f}' if r["status"] == "ok" else "-"
vs = ["v3_block_regs", "v6_split", "v7_stream", "v8_onchip", "auto"]
print("dtype cols", *[v[:6] for v in vs])
for k in sorted(t): print(*k, *[t[k].get(v, "-") for v in vs])
PY
grep -hE "^│ |^note" "$OUT/mm.txt" | grep -v "variant  " | cut -c1-140 >> "$S"
cat "$S"
