#!/usr/bin/env bash
# GPU batch (twenty-second session): v9's row timeline with each CTA's SM (%smid). gpu-done-97
# found the same CTAs late row after row (CTAs 8–15 and 141–147 of 264 at f32 256×1 Mi, 5–7 µs
# after their row's first against a median of 2.9): is it their SM (both CTAs of a slow SM
# late) or their place in the grid?
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
for shape in "256 1048576 f32 2" "64 4194304 f32 1" "128 2097152 bf16 1"; do
  set -- $shape
  echo "trace $shape" >> "$S"
  KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 timeout 100 .gpu/bin/v9_trace $1 $2 $3 $4 > "$OUT/trace-$1x$2-$3.log" 2>&1
  echo "exit $?" >> "$S"; grep -E "call|skew|loads out|lateness|latest|earliest|SMs;|valid|rror" "$OUT/trace-$1x$2-$3.log" | cut -c1-400 >> "$S"
  el "$shape"
done
cat "$S"
