#!/usr/bin/env bash
# GPU batch (thirtieth session), one call (~2 min): why kernlab's harness reads the same kernel
# 0.2-0.7 µs slower than its replay in PyTorch's process, both in the settled form (run 137).
# The knobs that differ between the two processes: the flush's form (the driver's memset here,
# a fill kernel in PyTorch's zero_), the stream (created here, the legacy one in PyTorch's).
# Prediction: if one of them is the cause, that knob's settled medians fall to the replay's
# (bf16 32 ~4.2, 128 ~4.6, 256 ~5.2, 512 ~6.4 µs).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
st() { python3 - "$1" "$2" <<'PY'
import csv, sys
print(sys.argv[2], *[r['dtype'] + ':' + r['cols'] + '=' + (f"{float(r['median_ms'])*1e3:.2f}/{float(r['settled_ms'])*1e3:.2f}" if r['status'] == 'ok' and r['settled_ms'] else r['status'][:10]) for r in csv.DictReader(open(sys.argv[1]))])
PY
}
for round in 1 2; do
for cfg in "default" "KERNLAB_FLUSH=kernel" "KERNLAB_STREAM=legacy" "KERNLAB_FLUSH=kernel KERNLAB_STREAM=legacy"; do
  for DT in bf16 f32; do
    n="r$round-$DT-$(echo $cfg | tr ' =' '__')"
    timeout 60 env $( [ "$cfg" = default ] || echo $cfg ) $K bench softmax --shape 4096x32 --shape 4096x128 --shape 4096x256 --shape 4096x512 --shape 256x1000 --dtype $DT --variants auto --rotate auto --rep-ms 20 --seed 1 --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1
    st "$OUT/$n.csv" "$n" >> "$S"
  done
done
done
el done
cat "$S"
