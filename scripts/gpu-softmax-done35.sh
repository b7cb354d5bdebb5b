#!/usr/bin/env bash
# GPU batch (tenth session): the done-means sweep of issue 5 on the committed kernels — auto
# against PyTorch native, torch.compile and the lecture's Triton kernel, 32…4 Mi columns
# (powers of two and odd widths), f32 and bf16, 4096 rows (fewer where 2^28 elements ask) —
# and a pure stream (GeLU v2: one read, one write an element) over the same shapes, for what
# the sizes allow under the same timing.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
timeout 420 $K sweep softmax --rows 4096 --cols 32..4194304:x2,33,255,1000,4097,12345,16385,65537,300007,1048577 --max-elements 2^28 --dtype f32,bf16 --variants auto --torch --rep-ms 30 --plot "$OUT/softmax-sweep-done.svg" --csv "$OUT/softmax-sweep-done.csv" > "$OUT/sweep.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
timeout 120 $K sweep gelu --rows 4096 --cols 4096..4194304:x2,4097,12345,16385,65537,300007,1048577 --max-elements 2^28 --dtype f32,bf16 --variants v2_vec16 --rep-ms 30 --csv "$OUT/stream-done.csv" > "$OUT/stream.log" 2>&1; echo "stream exit $?" >> "$S"
el stream
grep -m2 -i "copy\|ceiling" "$OUT/sweep.log" | cut -c1-200 >> "$S"
done_table "$OUT/softmax-sweep-done.csv" "$OUT/stream-done.csv" >> "$S"
cat "$S"
