#!/usr/bin/env bash
# GPU batch (twenty-sixth session, written at the commit after "kernlab_do_bench after review";
# not yet run): the kernlab_do_bench column. (1) The GPU test that replays auto's noted launch
# bit for bit, the other softmax GPU tests, the column end to end (kernlab_do_bench_replays_...)
# and the real baselines script on strided rows. (2) The µs-sized widths with --torch, two
# processes a dtype: auto (kernlab's harness), kernlab_do_bench (auto's launch under do_bench in
# PyTorch's process), native and compile, µs a call. Prediction (runs 121-123): kernlab_do_bench
# level with or shorter than native and compile's kernels at every width, and within ~0.5 µs of
# auto's own figure.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 300 softmax softmax
gpu_tests 200 kernlab_do_bench kernlab_do_bench
gpu_tests 200 baselines real_baselines_script
el tests
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1
for i in 1 2; do
  timeout 240 $K bench softmax --shape 4096x32 --shape 4096x33 --shape 4096x64 --shape 4096x128 --shape 4096x256 --shape 4096x512 --shape 4096x1024 --shape 4096x4097 --dtype f32,bf16 --variants auto --torch --rotate auto --rep-ms 30 --csv "$OUT/small-$i.csv" > "$OUT/small-$i.log" 2>&1
  echo "round $i exit $?" >> "$S"; grep -m3 "kernlab_do_bench" "$OUT/small-$i.log" | cut -c1-300 >> "$S"; ustab "$OUT/small-$i.csv" >> "$S"; el "round $i"
done
cat "$S"
