#!/usr/bin/env bash
# GPU batch (thirty-sixth session), one short call: the two trace tools after they came to share
# their setup (softmax_trace::trace_run): each validates its version on a fresh input, then
# one traced call.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_NVRTC_DEFINES=KL_V11_TRACE=1 timeout 60 .gpu/bin/v11_trace 256 1048576 f32 1 > "$OUT/v11.log" 2>&1
echo "v11_trace: exit $?" >> "$S"; grep -v "^ " "$OUT/v11.log" | head -4 >> "$S"; grep "slot's life\|span" "$OUT/v11.log" >> "$S"
KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 timeout 60 .gpu/bin/v9_trace 256 1048576 f32 1 > "$OUT/v9.log" 2>&1
echo "v9_trace: exit $?" >> "$S"; grep -v "^ " "$OUT/v9.log" | head -4 >> "$S"; grep "first stamp" "$OUT/v9.log" >> "$S"
el traces
cat "$S"
