#!/usr/bin/env bash
# GPU batch (eighteenth session): issue 5's done-means sweep again, one dtype a call
# (`bash scripts/gpu-done83.sh f32`, then `bf16`), as scripts/gpu-done69.sh (fifteenth
# session) but without the stream, which the softmax changes since do not move (its figures
# stay the fifteenth session's): `auto` against PyTorch native, torch.compile and the lecture's
# Triton kernel, 32…4 Mi columns at 4096 rows (2048 at 1 Mi, 1024 at 2 Mi, 512 at 4 Mi),
# rotated, every point validated before it is timed. First the eighteenth session's new GPU
# test (the launchers called directly).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
DT=${1:?dtype}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
# The eighteenth session's GPU test, written without a GPU: every launcher called directly.
gpu_tests 40 launchers cuda_launchers_refuse
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
timeout 500 $K sweep softmax --rows 4096 --cols 32..4194304:x2,33,255,1000,4097,12345,16385,65537,300007,1048577 --max-elements 2^31 --dtype "$DT" --variants auto --torch --rep-ms 30 --rotate auto --plot "$OUT/softmax-sweep-done-$DT.svg" --csv "$OUT/softmax-sweep-done-$DT.csv" > "$OUT/sweep.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
grep -m2 -i "copy\|ceiling" "$OUT/sweep.log" | cut -c1-200 >> "$S"
grep -i "sampled\|note:" "$OUT/sweep.log" | head -5 | cut -c1-200 >> "$S"
done_table "$OUT/softmax-sweep-done-$DT.csv" >> "$S"
cat "$S"
