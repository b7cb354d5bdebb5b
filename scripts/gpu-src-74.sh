#!/usr/bin/env bash
# GPU batch (sixteenth session): where v8 spends bf16 4097's extra 8% (the layout probe of
# gpu-layout-73 found it is not where the rows lie: a tail of one element at 32-byte-aligned
# rows costs as much). ncu's sampled warp stalls by SASS instruction and the stall reasons, v8
# at bf16 4096×4096 against 4096×4097.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
src() { local shape=$1 tag=$2
  timeout 150 ncu --clock-control none --section SourceCounters --section WarpStateStats \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio \
    -k regex:softmax_v8 -s 3 -c 1 -o "$OUT/src-$tag" $K bench softmax --shape $shape --dtype bf16 \
    --variants v8_onchip --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-$tag.log" 2>&1
  ncu -i "$OUT/src-$tag.ncu-rep" --page details --print-details all > "$OUT/details-$tag.txt" 2>&1
  ncu -i "$OUT/src-$tag.ncu-rep" --page source --csv --print-source sass > "$OUT/sass-$tag.csv" 2>&1
  echo "stalls $tag: $(grep -E 'issue_stalled_.*ratio' "$OUT/details-$tag.txt" | awk '$NF+0 > 0.2 {sub(/smsp__average_warps_issue_stalled_/,"",$1); sub(/_per_issue_active.ratio/,"",$1); print $1 "=" $NF}' | tr '\n' ' ')" >> "$S"
  python3 - "$OUT/sass-$tag.csv" "$tag" >> "$S" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr = next((i for i, r in enumerate(rows) if any("Source" == c for c in r)), None)
if hdr is None:
    print("sass", sys.argv[2], "no table:", " | ".join(",".join(r) for r in rows[:3])[:300]); sys.exit()
h = rows[hdr]
def col(name):
    return next((i for i, c in enumerate(h) if c.startswith(name)), None)
src, samp, ex = col("Source"), col("Warp Stall Sampling (All"), col("Instructions Executed")
data = []
for r in rows[hdr + 1:]:
    try: data.append((float(r[samp] or 0), r[src].strip()[:60], r[ex] if ex is not None else ""))
    except (ValueError, IndexError): pass
tot = sum(d[0] for d in data) or 1
print(f"sass {sys.argv[2]}: {len(data)} instructions, {tot:.0f} samples; top:")
for s, t, e in sorted(data, reverse=True)[:14]:
    print(f"  {100*s/tot:5.1f}%  {t}  (exec {e})")
PY
}
src 4096x4096 v8-4096
src 4096x4097 v8-4097
el ncu
cat "$S"
