#!/usr/bin/env bash
# GPU batch (prepared in the sixteenth session for the next one): what is left of bf16 4097's
# gap now that v8's scalars come by cp.async (2881–2959 GB/s against v8's own 4096 at
# 2975–3057 and v3's 4096 at 3150–3230). ncu's sampled warp stalls by SASS instruction and
# the stall reasons (as gpu-src-74), v8 at bf16 4096×4097 and 4096×4096, and v3 at 4096×4096.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
src() { local v=$1 shape=$2 tag=$3
  timeout 150 ncu --clock-control none --section SourceCounters --section WarpStateStats \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio \
    -k regex:softmax_ -s 3 -c 1 -o "$OUT/src-$tag" $K bench softmax --shape $shape --dtype bf16 \
    --variants $v --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-$tag.log" 2>&1
  ncu -i "$OUT/src-$tag.ncu-rep" --page details --print-details all > "$OUT/details-$tag.txt" 2>&1
  ncu -i "$OUT/src-$tag.ncu-rep" --page source --csv --print-source sass > "$OUT/sass-$tag.csv" 2>&1
  echo "stalls $tag: $(grep -E 'issue_stalled_.*ratio' "$OUT/details-$tag.txt" | awk '$NF+0 > 0.2 {sub(/smsp__average_warps_issue_stalled_/,"",$1); sub(/_per_issue_active.ratio/,"",$1); print $1 "=" $NF}' | tr '\n' ' ')" >> "$S"
  # The CSV: a kernel-name line, then the header (Address, Source, Warp Stall Sampling (All
  # Samples), …, Instructions Executed, …), then one line an instruction.
  python3 - "$OUT/sass-$tag.csv" "$tag" >> "$S" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr = next((i for i, r in enumerate(rows) if "Source" in r), None)
if hdr is None:
    print("sass", sys.argv[2], "no table:", " | ".join(",".join(r) for r in rows[:3])[:300]); sys.exit()
h = rows[hdr]
src, samp, ex = h.index("Source"), h.index("Warp Stall Sampling (All Samples)"), h.index("Instructions Executed")
data = []
for i, r in enumerate(rows[hdr + 1:]):
    try: data.append((float(r[samp] or 0), i, r[src].strip()[:60], r[ex]))
    except (ValueError, IndexError): pass
tot = sum(d[0] for d in data) or 1
print(f"sass {sys.argv[2]}: {len(data)} instructions, {tot:.0f} samples; top (share, line, instruction, executed):")
for s, i, t, e in sorted(data, reverse=True)[:14]:
    print(f"  {100*s/tot:5.1f}%  {i:5d}  {t}  ({e})")
PY
}
src v8_onchip 4096x4097 v8-4097
src v8_onchip 4096x4096 v8-4096
src v3_block_regs 4096x4096 v3-4096
el ncu
cat "$S"
