#!/usr/bin/env bash
# GPU batch: every test; doctor with fresh ceilings; graph/rotate/repeat timing; inspect with
# occupancy and SASS on the GPU machine.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 .gpu/run-tests > "$OUT/tests.log" 2>&1
echo "tests exit: $?"; grep -E "^test result|FAILED|panicked" "$OUT/tests.log" | head -20
{ $K doctor --fresh-ceilings; $K doctor | tail -4; } > "$OUT/doctor.txt" 2>&1; echo "doctor exit $?"
$K bench gelu --shape 4096x256 --variants manual,v2_vec16 --graph 20 --rotate 4 --repeat 3 > "$OUT/graph.txt" 2>&1; echo "graph exit $?"
$K bench softmax --shape 8192x4096 --repeat 3 > "$OUT/repeat.txt" 2>&1; echo "repeat exit $?"
$K inspect softmax --variant v2_warp_row,v3_block_regs,v5_cluster --dtype bf16 --sass --block 256 > "$OUT/inspect.txt" 2>&1; echo "inspect exit $?"
$K inspect gelu --variant v1_naive,v2_vec16,v3_vec16_ilp --sass >> "$OUT/inspect.txt" 2>&1; echo "inspect2 exit $?"
cat "$OUT/doctor.txt"; grep -vE "^\s*…" "$OUT/graph.txt" | cut -c1-170 | tail -14; grep -E "^│|±|noise|repeat" "$OUT/repeat.txt" | cut -c1-190 | tail -12
grep -E "^│|^occupancy|^SASS" "$OUT/inspect.txt" | cut -c1-250 | head -24
