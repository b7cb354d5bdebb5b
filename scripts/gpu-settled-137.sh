#!/usr/bin/env bash
# GPU batch (thirtieth session), one call (~6 min): the settled form on both sides.
# Run 136's host-pacing.py found every call (native, compile, a plain Triton kernel) 0.5-1.2 µs
# faster with the stream parked behind the flush and freed once it had finished (idle 0, 20 or
# 100 µs alike, and equal to a synchronize before each iteration) than with every launch queued
# ahead, and its idle-0 times moved by 0.07 µs at most between rounds. Here kernlab's harness and the
# baselines script both time µs-sized calls in that settled form too (`settled_ms`), and the
# verdict's third line judges by it. First the GPU tests of the settled timer, the replay and
# the real script; then 4096 x 32..2048 in bf16, f32 and f16, --repeat 3 on both sides.
# Prediction: settled medians 0.5-0.9 µs under the do_bench ones for every call; `auto`'s line
# against the settled times at or ahead (within 0.1 µs) at most points; a point still behind
# there is a kernel gap, not the harness.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
gpu_tests 120 settled settled
gpu_tests 200 kernlab_do_bench kernlab_do_bench
gpu_tests 200 baselines real_baselines_script
el tests
# `stab CSV`: per width, each variant's do_bench / settled median in µs.
stab() { python3 - "$1" <<'PY'
import csv, sys
t = {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["status"] != "ok": continue
    f = lambda k: f'{float(r[k])*1e3:.2f}' if r.get(k) else '-'
    t.setdefault(int(r["cols"]), []).append(f'{r["variant"].replace("torch_","")[:8]}={f("median_ms")}/{f("settled_ms")}')
for c in sorted(t): print(c, *t[c])
PY
}
for DT in bf16 f32 f16; do
  timeout 170 $K bench softmax --shape 4096x32 --shape 4096x33 --shape 4096x64 --shape 4096x128 --shape 4096x255 --shape 4096x256 --shape 4096x512 --shape 4096x1024 --shape 4096x2048 --dtype $DT --variants auto --torch --rotate auto --rep-ms 30 --repeat 3 --csv "$OUT/settled-$DT.csv" > "$OUT/settled-$DT.log" 2>&1
  echo "settled $DT exit $?" >> "$S"
  grep "against PyTorch native\|against their queued times\|against their settled times" "$OUT/settled-$DT.log" | cut -c1-1200 >> "$S"
  stab "$OUT/settled-$DT.csv" >> "$S"
  el "settled $DT"
done
cat "$S"
