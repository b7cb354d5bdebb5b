#!/usr/bin/env bash
# GPU batch (twenty-fourth session): does the H200 give some SMs more of the memory system
# than others? examples/sm_rates.rs (every SM streaming at once, two 512-thread CTAs an SM,
# reading only and copying; 4 MiB and 16 MiB a CTA), then v9's traces with each SM's loads'
# start, load time and stores (f32 64×4 Mi smpair, f32 256×1 Mi ping-pong).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 60 .gpu/bin/sm_rates 4 3 > "$OUT/rates-4.log" 2>&1; echo "== rates 4 MiB exit $?" >> "$S"
grep -vE "every SM" "$OUT/rates-4.log" | cut -c1-400 >> "$S"
timeout 60 .gpu/bin/sm_rates 16 2 > "$OUT/rates-16.log" 2>&1; echo "== rates 16 MiB exit $?" >> "$S"
grep -vE "every SM" "$OUT/rates-16.log" | cut -c1-400 >> "$S"
el rates
tr() {  # tr NAME ROWS COLS DTYPE CALLS [env...]
  local n=$1 r=$2 c=$3 d=$4 k=$5; shift 5
  env "$@" KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 timeout 60 .gpu/bin/v9_trace "$r" "$c" "$d" "$k" > "$OUT/trace-$n.log" 2>&1
  echo "== $n exit $?" >> "$S"
  grep -E "^call|skew|top →|correlation of SMs" "$OUT/trace-$n.log" | cut -c1-220 >> "$S"
}
tr smpair-4mi 64 4194304 f32 2
tr pp-1mi 256 1048576 f32 2
el traces
cat "$S"
