#!/usr/bin/env bash
# GPU batch (sixth session): v8 with thread-scaled CTAs (parts that fit in registers take
# only the threads they need) and its register max taken before the cp.async wait: the
# softmax tests, then v8 against v3/v6/auto at odd and medium widths and bf16 2 Mi, and ncu
# on v3 and v8 at the same f32 4096x32768 (identical register layout, v8 measured 5% slower).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 200 .gpu/run-tests softmax > "$OUT/tests.log" 2>&1; echo "softmax tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | grep -v " 0 passed" | head -12 >> "$S"
el tests
timeout 200 $K sweep softmax --rows 4096 --cols 4097,8193,16384,16385,32768,32769,65536,131072,2097152 --max-elements 2^28 --dtype f32,bf16 --variants v3_block_regs,v6_split,v8_onchip,auto --rep-ms 15 --warmup-ms 10 --csv "$OUT/v8b.csv" > "$OUT/v8b.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
SEC="--clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats"
for v in v3_block_regs v8_onchip; do
  timeout 60 ncu $SEC -k regex:softmax_v[38] -c 1 $K bench softmax --shape 4096x32768 --variants $v --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-$v.txt" 2>&1
  echo "ncu $v: $(grep -E 'Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Stall Long|Warp Cycles Per Issued' "$OUT/ncu-$v.txt" | awk '{$1=$1};1' | tr '\n' ';' | cut -c1-400)" >> "$S"
done
el ncu
python3 - "$OUT" >> "$S" <<'PY'
import csv, sys, os
p = os.path.join(sys.argv[1], "v8b.csv")
t, notes = {}, {}
for r in csv.DictReader(open(p)) if os.path.exists(p) else []:
    k = (r["dtype"], r["shape"])
    t.setdefault(k, {})[r["variant"]] = f'{float(r["gbps"]):.0f}' if r["status"] == "ok" else r["status"][:5]
    if r["variant"] == "auto": notes[k] = r["note"][:30]
vs = ["v3_block_regs", "v6_split", "v8_onchip", "auto"]
print("dtype shape", *[v[:6] for v in vs])
for k in sorted(t, key=lambda k: (k[0], int(k[1].split("x")[1]))):
    print(*k, *[t[k].get(v, "-") for v in vs], notes.get(k, ""))
PY
cat "$S"
