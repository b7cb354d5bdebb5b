#!/usr/bin/env bash
# GPU batch (twenty-ninth session), one call of ~1 min: does the SM clock fall during the harness's
# back-to-back loop of 256 MiB flushes? nvidia-smi samples the SM clock, power and the active
# clock-event reasons every 20 ms while kernlab times bf16 4096x64 (`auto`, 300 ms of calls,
# then the same with --torch: native and compile under do_bench and their queued loops).
# Hypothesis: the µs-sized calls' levels (compile's do_bench medians 0.3-0.9 µs under its queued
# ones; kernlab's harness above the same launch replayed in PyTorch's process) follow the SM
# clock, which falls under sustained full-bandwidth flushes (power) and less where a slow host
# leaves the GPU gaps. Refuted if the clock holds at its maximum throughout.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
R=clocks_event_reasons.active; nvidia-smi --query-gpu=$R --format=csv > /dev/null 2>&1 || R=clocks_throttle_reasons.active
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,$R --format=csv,noheader,nounits -lms 20 > "$OUT/smi.csv" 2>&1 &
SMI=$!
sleep 1
echo "mark kernlab $(date +%s.%N)" > "$OUT/marks"
timeout 60 $K bench softmax --shape 4096x64 --dtype bf16 --variants auto --rep-ms 300 --rotate auto > "$OUT/k.log" 2>&1
echo "mark torch $(date +%s.%N)" >> "$OUT/marks"
timeout 120 $K bench softmax --shape 4096x64 --dtype bf16 --variants auto --torch --rep-ms 100 --rotate auto > "$OUT/t.log" 2>&1
echo "mark end $(date +%s.%N)" >> "$OUT/marks"
sleep 0.5; kill $SMI
grep -i "auto\|native\|compile" "$OUT/k.log" "$OUT/t.log" | grep -i "µs\|ms\|GB/s" | cut -c1-200 | head -12 >> "$S"
python3 - "$OUT/smi.csv" >> "$S" <<'PY'
import sys, collections
rows = [l.split(", ") for l in open(sys.argv[1]) if l.count(",") >= 5]
print("samples", len(rows))
by = collections.Counter((r[1], r[5].strip()) for r in rows)
for (clk, why), n in sorted(by.items(), key=lambda x: -x[1])[:12]: print("sm", clk, "reasons", why, "n", n)
pw = sorted(float(r[3]) for r in rows if r[3].replace('.', '').isdigit())
if pw: print("power min/median/max", pw[0], pw[len(pw)//2], pw[-1])
PY
# the run as a timeline: each 10 samples, the SM clock's min-max and the power's max
python3 - "$OUT/smi.csv" >> "$S" <<'PY'
import sys
rows = [l.strip().split(", ") for l in open(sys.argv[1]) if l.count(",") >= 5]
line = []
for i in range(0, len(rows), 10):
    ch = rows[i:i+10]
    c = [int(r[1]) for r in ch if r[1].isdigit()]
    p = [float(r[3]) for r in ch if r[3].replace('.', '').isdigit()]
    if c and p: line.append(f"{min(c)}-{max(c)}/{max(p):.0f}W")
print(" ".join(line))
PY
cat "$OUT/marks" >> "$S"
el clocks
cat "$S"
