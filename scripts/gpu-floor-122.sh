#!/usr/bin/env bash
# GPU batch (twenty-sixth session, commit after 4781ef4, same kernels): run 121 found kernlab's
# v2 level with or faster than Inductor's kernel timed alone at bf16 ×32–×256, yet in run 120's
# sweep torch.compile's calls were ~1.1 µs shorter (bf16 4096×64: 4.39 against 5.55 µs). Each
# side's floor of a call (event, launch, event) on a 1-row problem, and GeLU (a plain stream)
# at the same bytes, all with --torch in one process; the softmax points twice.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
us() { python3 - "$1" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    ok = r["status"] == "ok"
    f = lambda k: f"{float(r[k])*1000:.2f}" if ok and r[k] else "-"
    print(f"{r['op']} {r['dtype']} {r['shape']} {r['variant']}: median {f('median_ms')} p20 {f('p20_ms')} p80 {f('p80_ms')} min {f('min_ms')} us" + ("" if ok else " " + r["status"][:20]))
PY
}
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1
for i in 1 2; do
  timeout 200 $K bench softmax --shape 1x32 --shape 4096x64 --shape 4096x256 --dtype bf16 --variants auto --torch --rotate auto --rep-ms 30 --csv "$OUT/sm-$i.csv" > "$OUT/sm-$i.log" 2>&1
  echo "softmax round $i exit $?" >> "$S"; us "$OUT/sm-$i.csv" >> "$S"; el "softmax $i"
done
timeout 200 $K bench gelu --shape 1x64 --shape 4096x64 --dtype bf16 --variants v2_vec16 --torch --rotate auto --rep-ms 30 --csv "$OUT/gelu.csv" > "$OUT/gelu.log" 2>&1
echo "gelu exit $?" >> "$S"; us "$OUT/gelu.csv" >> "$S"; el gelu
cat "$S"
