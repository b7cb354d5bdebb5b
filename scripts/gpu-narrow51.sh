#!/usr/bin/env bash
# GPU batch (twelfth session): the narrow rows where the rotated done sweep (done49) had
# torch.compile ahead (f32 128–1024). (1) The kernels alone, back to back, no flush: compile's
# (CUPTI via torch.profiler, scripts/compile-softmax-kernels.py) against `auto`'s (kernlab
# profile), and whether Inductor's kernels carry eviction policies. (2) `auto` against v2's
# scalar form (KERNLAB_V2=scalar, ≤ 256 cols) with --rotate auto, interleaved twice.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind
timeout 150 python3 scripts/compile-softmax-kernels.py 4096x128 4096x256 4096x512 4096x1024 > "$OUT/compile.log" 2>&1; echo "compile exit $?" >> "$S"
grep "GB/s" "$OUT/compile.log" | sed 's/compile kernel triton_[a-z_]*[0-9]*/compile/' >> "$S"
echo "inductor eviction_policy uses: $(grep -rho "eviction_policy='[a-z_]*'" /tmp/ind 2>/dev/null | sort | uniq -c | tr '\n' ' ')" >> "$S"
el compile
for c in 128 256 512 1024; do
  timeout 30 $K profile softmax --variant auto --shape 4096x$c --iters 20 > "$OUT/p$c.log" 2>&1
  echo "auto 4096x$c: $(grep -m1 -E "softmax_v[0-9]" "$OUT/p$c.log" | tr -s ' ' | cut -c1-200)" >> "$S"
done
el profile
for rep in 1 2; do
  for m in default scalar; do
    e=(env); [ $m = scalar ] && e+=(KERNLAB_V2=scalar)
    timeout 60 "${e[@]}" $K sweep softmax --rows 4096 --cols 32,64,128,256,512,1024 --dtype f32,bf16 --variants auto --rep-ms 15 --warmup-ms 5 --rotate auto --csv "$OUT/n.csv" > "$OUT/n.log" 2>&1
    echo "$m: $(tab "$OUT/n.csv")" >> "$S"
  done
done
el narrow
cat "$S"
