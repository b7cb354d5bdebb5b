#!/usr/bin/env bash
# GPU batch (twenty-fourth session): do neighbouring SMs run late together in v9? The
# twenty-third session's smpair traces listed adjacent SM indices among the latest six (122
# and 123, 94 and 95; 25, 26 and 27). v9_trace now prints the correlation of SMs' mean
# lateness between SM s and s^1 (which may share a TPC), s^2, s^4 and s^64, and every SM's
# mean lateness. Traces (each validated first): the default at f32 256×1 Mi (ping-pong, 8
# groups; three calls, to see whether the late SMs stay late from launch to launch), smpair
# forced there (two calls), f32 64×4 Mi (smpair by default, 2 groups; two calls), bf16
# 128×2 Mi (one call).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
tr() {  # tr NAME ROWS COLS DTYPE CALLS [env...]
  local n=$1 r=$2 c=$3 d=$4 k=$5; shift 5
  env "$@" KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 timeout 60 .gpu/bin/v9_trace "$r" "$c" "$d" "$k" > "$OUT/trace-$n.log" 2>&1
  echo "== $n exit $?" >> "$S"
  grep -E "^call|skew|row time|top →|waiting|correlation|latest SMs" "$OUT/trace-$n.log" | cut -c1-220 >> "$S"
}
tr pp-1mi 256 1048576 f32 3
el pp
tr smpair-1mi 256 1048576 f32 2 KERNLAB_V9=smpair=1
el smpair
tr smpair-4mi 64 4194304 f32 2
el 4mi
tr pp-bf16-2mi 128 2097152 bf16 1
el bf16
cat "$S"
