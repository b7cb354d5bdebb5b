#!/usr/bin/env bash
# GPU batch (fifth session, last): the softmax tests with KERNLAB_REQUIRE_GPU=1 on the final
# kernels (16-bit diet, log_softmax exact form), then the full width sweep 32…4 Mi with the
# PyTorch columns, for docs/softmax.md.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 100 .gpu/run-tests softmax > "$OUT/tests.log" 2>&1; echo "softmax tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | grep -v " 0 passed" | head -8 >> "$S"
el tests
timeout 460 $K sweep softmax --rows 4096 --cols 32..4194304:x2,33,255,1000,4097,16385,65537,1048577 --max-elements 2^28 --dtype f32,bf16 --variants v2_warp_row,v3_block_regs,v5_cluster,v6_split,auto --torch --rep-ms 30 --plot "$OUT/softmax-sweep-final.svg" --csv "$OUT/softmax-sweep-final.csv" > "$OUT/sweep.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
python3 - "$OUT/softmax-sweep-final.csv" >> "$S" <<'PY'
import csv, sys
t = {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["status"] == "ok":
        t.setdefault((r["dtype"], int(r["cols"])), {})[r["variant"]] = float(r["gbps"])
print("dtype cols auto torch_native torch_compile triton")
for k in sorted(t):
    d = t[k]
    print(*k, *[f"{d.get(v, 0):.0f}" for v in ["auto", "torch_native", "torch_compile", "triton"]])
PY
cat "$S"
