#!/usr/bin/env bash
# GPU batch (eighteenth session): v8 persistent. v8 launches one CTA (or one cluster of C) a
# row; past one CTA's worth a cluster's SMs idle between rows while the next cluster is placed
# (a cluster of C needs C free SMs of one GPC). KL_V8_PERSIST=1 with KERNLAB_V8=persist=0
# launches as many CTAs / clusters as the GPU holds at once, each walking rows. First the
# softmax GPU tests with every v8 launch persistent; then v8_onchip default against
# persistent, interleaved twice, at one-CTA and cluster widths, and at clusters of 16 (with
# `auto`, v9 there, for reference).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
KERNLAB_NVRTC_DEFINES=KL_V8_PERSIST=1 KERNLAB_V8=persist=0 gpu_tests 200 softmax softmax
el tests
F32="--shape 4096x4097 --shape 4096x65536 --shape 2048x131072 --shape 1024x262144 --shape 512x524288"
B16="--shape 4096x4097 --shape 4096x131072 --shape 2048x262144 --shape 1024x524288 --shape 512x1048576"
C16="--shape 256x1048576 --shape 128x2097152"
for round in 1 2; do
  for form in default persist; do
    d=; p=; [ $form = persist ] && { d=KL_V8_PERSIST=1; p=persist=0; }
    for set in f32 bf16 c16; do
      case $set in
        f32) a="$F32 --dtype f32"; v=v8_onchip; e=$p ;;
        bf16) a="$B16 --dtype bf16"; v=v8_onchip; e=$p ;;
        c16) a="$C16 --dtype f32,bf16"; v=v8_onchip; e="cluster=16${p:+,$p}"; [ $round = 1 ] && v=v8_onchip,auto ;;
      esac
      KERNLAB_NVRTC_DEFINES=$d KERNLAB_V8=$e timeout 150 $K bench softmax $a --variants $v \
        --rep-ms 20 --rotate auto --csv "$OUT/p-$form-$set-$round.csv" > "$OUT/p-$form-$set-$round.txt" 2>&1
      el "$form $set $round: exit $?"
    done
  done
done
python3 - "$OUT" >> "$S" <<'PY'
import csv, sys, collections, glob, re
out = sys.argv[1]; g = collections.defaultdict(list)
for f in sorted(glob.glob(f"{out}/p-*.csv")):
    form = re.match(r".*/p-(\w+)-\w+-\d\.csv", f).group(1)
    for x in csv.DictReader(open(f)):
        k = (x['dtype'], x['rows'], x['cols'], 'c16' if '-c16-' in f else '')
        name = form if x['variant'].startswith('v8') else 'auto'
        g[k, name].append(float(x['gbps']) if x['status'] == 'ok' else float('nan'))
m = lambda v: sum(v) / len(v) if v else float('nan')
print("dtype rows cols: default r1/r2 | persist r1/r2 (change) | auto")
for k in sorted({k for k, _ in g}, key=lambda k: (k[3], k[0], int(k[2]))):
    a, b = g[k, 'default'], g[k, 'persist']; f = lambda v: "/".join(f"{x:.0f}" for x in v)
    print(*k[:3], k[3], f"{f(a)} | {f(b)} ({100*(m(b)/m(a)-1):+.1f}%) | {f(g[k, 'auto'])}")
PY
grep -h -i "error\|refus" "$OUT"/p-*.txt | sort | uniq -c | head -5 | cut -c1-250 >> "$S"
cat "$S"
