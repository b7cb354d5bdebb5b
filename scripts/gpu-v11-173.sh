#!/usr/bin/env bash
# GPU batch (thirty-fifth session), one call: `auto` routed to v11_deal for rows of at most
# 4 MB that v9 took (V11_ROW_BYTES), against v9 and v11 forced, at row sizes of 2-8 MB, so
# the band can be set by measurement. Run 172 had v11 ahead at 2 and 4 MB rows (f32 1 Mi,
# bf16 1 and 2 Mi) and far behind at 16 MB (f32 4 Mi). Prediction: ahead at 3 MB (f32
# 786432) and at the odd 1048577; level or behind at 6-8 MB (f32 1.5 and 2 Mi, bf16 3 and 4
# Mi), where a row holds a third to half of the grid's slots.
# Every point is validated against the f64 reference before it is timed (bench).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
V=auto,v9_gridsync,v11_deal
bench_points f1 "341x786432 256x1048576 256x1048577" $V f32
bench_points f2 "170x1572864 128x2097152" $V f32
el "f32"
bench_points b1 "256x1048576 128x2097152 256x1048577" $V bf16
bench_points b2 "96x3145728 64x4194304" $V bf16
el "bf16"
cat "$S"
