#!/usr/bin/env bash
# Remake every table in docs/ with the commands the docs show.
#
# Run from the repository root on the GPU machine, with the release binary at .gpu/bin/kernlab
# (override with KERNLAB=path). Everything it writes goes under ${OUT:-out}/SECTION/: each
# command's printed table (NAME.txt), and the CSVs, plots and traces the commands write (the
# docs' commands name docs/figures/... or a bare file for these; here they land under $OUT, so
# the checked-in files change only when you copy them over). Perf-notes' tables are records of
# experiments, many on forms that are gone, and are not remade.
#
#   tools/reproduce-docs.sh                  every section, in order
#   tools/reproduce-docs.sh softmax-targets  one section (or several, in the order given)
#   tools/reproduce-docs.sh --list           the sections
#
# 80 kernlab commands in 17 sections, about 87 minutes in all. Each section stays under 10
# minutes, so one section fits one call of a time-limited device (cutlass's minute assumes the
# libraries built beforehand, as below):
#
#   section            commands  ~minutes  tables it remakes
#   gelu                      5      3     gelu.md: the H200 table; inspect/ and profile/ output
#   softmax-targets           1      5     softmax.md: TARGETS.md's shapes
#   softmax-sweep-f32         1      6     softmax.md: every width, f32, and figures/softmax-sweep.*
#   softmax-sweep-bf16        1      6     softmax.md: every width, bf16
#   softmax-sweep-f16         1      6     softmax.md: every width, f16
#   softmax-wide              4      6     softmax.md: the 1-4 Mi points (v11), v9 against v11
#   softmax-misc              2      4     softmax.md: the stream of the same bytes; the manual profile
#   matmul                    3      8     matmul.md: the ladder at 8192³, the sweep, figures/matmul-sweep.*
#   matmul-v7                 5      5     matmul.md: v7 autotuned, exact f32, cuBLAS's kernels
#   linear                    3      5     linear.md: the fused epilogue against PyTorch; GeLU 8192² bf16
#   rmsnorm                   4      3     rmsnorm.md: against PyTorch, flushed and rotated; the versions; the stream
#   compiled                 14      7     compiled.md: compiled against hand and PyTorch; launch counts
#   mlp                      14      7     mlp.md: forward, training step, batch 1, f32, the sync pitfall, the profiles, the scaling sweeps
#   triton                    8      3     triton.md: the spill, the tables, the same kernels under do_bench
#   cutlass                   5      1     cutlass.md: validation, CUTLASS against cuBLAS and v7, the fused linear
#   cpu                       2      2     softmax.md, linear.md: the CPU tier (--device cpu)
#   cpu-torch                 7     12     cpu.md, gelu.md: the CPU tier beside PyTorch's CPU kernels (torch on the CPU)
#
# The cache (compiled kernels, ceilings, autotune entries) is $OUT/cache, so your own is left
# alone. Order matters where the docs' tables depend on the autotune cache: `matmul` starts from
# an empty autotune cache (its ladder used default configurations) and tunes v5/v6 before its
# sweep; `matmul-v7` and `linear` tune v6/v7 first. Softmax's tables used no autotune entry.
# `--torch` needs Python with torch and triton; without them kernlab says so and the PyTorch
# columns are missing. A command that fails (a variant failing validation exits non-zero) stops
# the script.
set -euo pipefail

K=${KERNLAB:-.gpu/bin/kernlab}
OUT=${OUT:-out}
SECTIONS=(gelu softmax-targets softmax-sweep-f32 softmax-sweep-bf16 softmax-sweep-f16
  softmax-wide softmax-misc matmul matmul-v7 linear rmsnorm compiled mlp triton cutlass cpu cpu-torch)

export KERNLAB_CACHE_DIR="$OUT/cache"
D=  # the current section's output folder

# `kl NAME ARGS...`: run `kernlab ARGS...`, print the command, keep its output in $D/NAME.txt.
kl() {
  local name=$1
  shift
  echo "+ kernlab $*" >&2
  "$K" "$@" 2>&1 | tee "$D/$name.txt"
}

section_gelu() {
  kl bench bench gelu --shape 16384x16384 --dtype f32,bf16 --torch
  kl inspect inspect gelu --variant v1_naive,v2_vec16,v3_vec16_ilp --sass
  kl profile-manual profile gelu --variant manual --shape 8192x8192 --trace "$D/trace-gelu-manual.json"
  kl profile-v2_vec16 profile gelu --variant v2_vec16 --shape 8192x8192 --trace "$D/trace-gelu-v2_vec16.json"
  kl profile-manual-sync-each-launch profile gelu --variant manual --shape 8192x8192 \
    --sync-each-launch --trace "$D/trace-gelu-manual-sync-each-launch.json"
}

section_softmax-targets() {
  kl targets bench softmax --dtype f32 --shape 8192x4096 --shape 4096x256 --shape 4096x1024 \
    --shape 4096x12672 --shape 4096x32768 --shape 1024x131072 --shape 256x1048576 \
    --variants auto --torch --rep-ms 30 --rotate auto --repeat 3 --csv "$D/targets.csv"
}

# `sweep_widths DTYPE [--plot FILE]`: softmax.md's sweep of every width at 4096 rows.
sweep_widths() {
  local dt=$1
  shift
  kl "sweep-$dt" sweep softmax --rows 4096 \
    --cols 32..4194304:x2,33,255,1000,4097,12345,16385,65537,300007,1048577 --max-elements 2^31 \
    --dtype "$dt" --variants auto --torch --rep-ms 30 --rotate auto "$@" --csv "$D/softmax-sweep-$dt.csv"
}

section_softmax-sweep-f32() {
  # The docs' command writes docs/figures/softmax-sweep.{svg,csv}.
  sweep_widths f32 --plot "$D/softmax-sweep.svg"
}

section_softmax-sweep-bf16() {
  sweep_widths bf16
}

section_softmax-sweep-f16() {
  sweep_widths f16
}

section_softmax-wide() {
  local dt
  for dt in f32 bf16; do
    kl "wide-$dt" sweep softmax --rows 4096 --cols 1048576,2097152,4194304 --max-elements 2^31 \
      --dtype "$dt" --variants auto --torch --rep-ms 30 --rotate auto --csv "$D/wide-$dt.csv"
  done
  kl v9-v11-f32 bench softmax --dtype f32 --shape 341x786432 --shape 256x1048576 \
    --shape 256x1048577 --shape 170x1572864 --shape 128x2097152 \
    --variants auto,v9_gridsync,v11_deal --rep-ms 30 --rotate auto --seed 1
  kl v9-v11-bf16 bench softmax --dtype bf16 --shape 256x1048576 --shape 128x2097152 \
    --shape 256x1048577 --shape 96x3145728 --shape 64x4194304 \
    --variants auto,v9_gridsync,v11_deal --rep-ms 30 --rotate auto --seed 1
}

section_softmax-misc() {
  kl stream sweep gelu --rows 4096 \
    --cols 4096,4097,8192,12345,16384,16385,32768,65536,65537,131072,262144,524288,1048576,2097152,4194304 \
    --max-elements 2^31 --dtype f32,bf16 --variants v2_vec16 --rep-ms 30 --rotate auto --csv "$D/stream.csv"
  kl profile-manual profile softmax --variant manual --shape 8192x4096
}

section_matmul() {
  # The ladder ran with default configurations: no autotune entry for matmul yet.
  rm -f "$KERNLAB_CACHE_DIR/autotune.json"
  kl ladder bench matmul --shape 8192x8192x8192 --dtype bf16
  kl autotune-v5-v6 autotune matmul --shape 8192x8192x8192 --dtype bf16 --variants v5_mma,v6_wgmma
  # The docs' command writes docs/figures/matmul-sweep.{svg,csv}.
  kl sweep sweep matmul --square 1024..16384 --dtype bf16 \
    --variants v3_regs,v4_grouped,v5_mma,v6_wgmma,auto,cublas \
    --plot "$D/matmul-sweep.svg" --csv "$D/matmul-sweep.csv"
}

section_matmul-v7() {
  kl autotune-v6-v7 autotune matmul --shape 8192x8192x8192 --dtype bf16 \
    --variants v6_wgmma,v7_wgmma_tma_store
  kl v7 bench matmul --shape 8192x8192x8192 --dtype bf16 \
    --variants v6_wgmma,v7_wgmma_tma_store,auto,cublas,cublaslt
  kl f32 bench matmul --shape 4096x4096x4096 --dtype f32 \
    --variants v2_smem,v3_regs,v4_grouped,auto,cublas,cublaslt
  kl profile-cublas-2048 profile matmul --variant cublas --shape 2048x2048x2048 --dtype bf16 --row-limit 4
  kl profile-cublas-128 profile matmul --variant cublas --shape 128x128x128 --dtype bf16 --row-limit 4
}

section_linear() {
  kl autotune autotune linear --shape 8192x8192x8192 --dtype bf16 --variants v6_wgmma,v7_wgmma_tma_store
  kl bench bench linear --shape 8192x8192x8192 --dtype bf16 \
    --variants manual,v6_wgmma,v7_wgmma_tma_store,auto,cublaslt --torch
  kl gelu-8192 bench gelu --shape 8192x8192 --dtype bf16 --variants v2_vec16
}

section_rmsnorm() {
  kl bench bench rmsnorm --shape 4096x4096 --dtype bf16,f32 --torch --repeat 3
  kl bench-rotated bench rmsnorm --shape 4096x4096 --dtype bf16,f32 --torch --repeat 3 --rotate auto
  kl versions bench rmsnorm --shape 4096x4096 --dtype bf16,f32 \
    --variants auto,manual,v2_block_regs,v3_two_pass --repeat 3
  kl stream bench gelu --shape 4096x4096 --dtype bf16 --variants v2_vec16 --repeat 3
}

section_compiled() {
  kl gelu bench gelu --shape 16384x16384 --dtype f32,bf16 --variants v2_vec16,compiled \
    --torch --repeat 3
  kl gelu-erf bench gelu --gelu erf --shape 16384x16384 --dtype f32,bf16 \
    --variants v2_vec16,compiled --torch --repeat 3
  kl softmax bench softmax --shape 8192x4096 --shape 4096x12672 --shape 4096x32768 \
    --shape 1024x131072 --dtype f32,bf16 --variants auto,compiled --torch --repeat 3
  kl rmsnorm bench rmsnorm --shape 4096x4096 --dtype bf16,f32 \
    --variants v2_block_regs,compiled --torch --repeat 3
  kl linear bench linear --shape 8192x8192x8192 --dtype bf16 \
    --variants v7_wgmma_tma_store,compiled,cublaslt --torch --repeat 3
  for a in "gelu --shape 8192x8192" "softmax --shape 4096x32768" "rmsnorm --shape 4096x4096" \
    "linear --shape 8192x8192x8192 --dtype bf16"; do
    for v in manual compiled; do
      # shellcheck disable=SC2086
      kl "profile-${a%% *}-$v" profile $a --variant "$v" --iters 1
    done
  done
  kl expr compile --expr 'x * sigmoid(1.702 * x)' --run --shape 4096x4096 --dtype bf16
}

section_mlp() {
  kl autotune-fwd autotune linear --shape 1024x2048x2048 --dtype bf16 --activation gelu-erf
  kl autotune-wgrad autotune matmul --shape 2048x2048x1024 --dtype bf16
  kl forward bench mlp --shape 1024x2048 --dtype bf16 --graph 1 --torch
  kl train bench mlp --shape 1024x2048 --dtype bf16 --mode train --graph 1 --torch
  kl batch1 bench mlp --shape 1x2048 --dtype bf16 --graph 1 --torch
  kl f32 bench mlp --shape 1024x2048 --dtype f32 --torch --variants manual,cuda,cublaslt
  kl steps bench mlp --shape 1024x2048 --dtype bf16 --steps 8 --layers 16 --variants manual,cuda
  kl steps-sync bench mlp --shape 1024x2048 --dtype bf16 --steps 8 --layers 16 \
    --variants manual,cuda --sync-each-step
  kl profile-cuda profile mlp --variant cuda --shape 1024x2048 --dtype bf16 --layers 64 --iters 2
  kl profile-manual profile mlp --variant manual --shape 1024x2048 --dtype bf16 --layers 64 \
    --iters 2 --trace "$D/mlp.json"
  kl sweep-steps sweep mlp --torch=torch_native --dtype bf16 --warmup-ms 10 --rep-ms 40 --mode train --steps 1,2,4,8,16 --rows 1024 --cols 1024 \
    --layers 8 --plot "$D/steps.svg"
  kl sweep-layers sweep mlp --torch=torch_native --dtype bf16 --warmup-ms 10 --rep-ms 40 --mode train --layers 1,4,16,64 --rows 1024 --cols 1024 \
    --plot "$D/layers.svg"
  kl sweep-batch sweep mlp --torch=torch_native --dtype bf16 --warmup-ms 10 --rep-ms 40 --rows 1,16,256,4096 --cols 2048 --layers 16 \
    --plot "$D/batch.svg"
  kl sweep-dim sweep mlp --torch=torch_native --dtype bf16 --warmup-ms 10 --rep-ms 40 --rows 1024 --cols 256..8192:x2 --layers 16 \
    --plot "$D/dim.svg"
}

# triton.md: the tutorial's kernels in kernlab's process, then the same launches under do_bench.
# The matmul is autotuned first (its eight configurations), as a user would before timing it.
section_triton() {
  kl inspect-4096 inspect softmax --variant triton --dtype bf16 --shape 1024x4096
  kl inspect-131072 inspect softmax --variant triton --dtype bf16 --shape 1024x131072
  kl gelu bench gelu --device cuda --variants v3_vec16_ilp,triton --dtype bf16 --shape 8192x8192
  kl autotune autotune matmul --shape 8192x8192x8192 --dtype bf16 --variants triton
  kl matmul bench matmul --device cuda --variants cublas,v7_wgmma_tma_store,triton --dtype bf16 \
    --shape 8192x8192x8192
  kl do-bench bench gelu,softmax --device cuda --variants triton --torch --dtype bf16 --shape 8192x8192
  kl do-bench-matmul bench matmul --device cuda --variants triton --torch --dtype bf16 \
    --shape 4096x4096x4096
  kl collapse bench softmax --device cuda --variants auto,triton --torch --shape 1024x131072
}

# cutlass.md. The CUTLASS libraries take nvcc minutes each to build: ones already built into
# .gpu/cache/cutlass (`KERNLAB_CACHE_DIR=.gpu/cache kernlab doctor --build-cutlass sm_90a`, then
# carried with .gpu) are copied into this run's cache; missing ones are built on first use.
section_cutlass() {
  if [[ -d .gpu/cache/cutlass ]]; then
    mkdir -p "$KERNLAB_CACHE_DIR/cutlass"
    cp -rn .gpu/cache/cutlass/. "$KERNLAB_CACHE_DIR/cutlass/"
  fi
  kl check bench matmul,linear --device cuda --variants cutlass --check-only --dtype bf16,f16 \
    --shape 129x264x72 --shape 1000x1000x1000
  kl autotune-matmul autotune matmul --shape 8192x8192x8192 --dtype bf16 --variants cutlass
  kl matmul bench matmul --dtype bf16 --shape 8192x8192x8192 \
    --variants cublas,v7_wgmma_tma_store,cutlass --repeat 3
  kl autotune-linear autotune linear --shape 8192x8192x8192 --dtype bf16 --variants cutlass
  kl linear bench linear --dtype bf16 --shape 8192x8192x8192 \
    --variants v7_wgmma_tma_store,cublaslt,cutlass --repeat 3 --torch
}

# cpu.md's table beside PyTorch: torch on the CPU (KERNLAB_PYTHON, docs/benchmarking.md "On
# the CPU"); the docs' table was made on a CPU-only VM, not the GPU machine's host.
section_cpu-torch() {
  kl gelu bench gelu --device cpu --torch=torch_native --shape 4096x4096 --dtype f32,bf16 --repeat 3 --seed 1
  kl gelu-erf bench gelu --device cpu --torch=torch_native --gelu erf --shape 4096x4096 --dtype f32,bf16 \
    --repeat 3 --seed 1
  kl softmax bench softmax --device cpu --torch=torch_native --shape 2048x1024 --shape 1823x781 \
    --shape 256x32768 --shape 1x4194304 --dtype f32,bf16 --repeat 3 --seed 1
  kl log-softmax bench softmax --device cpu --torch=torch_native --log-softmax --shape 2048x1024 \
    --shape 1823x781 --shape 256x32768 --shape 1x4194304 --dtype f32,bf16 --repeat 3 --seed 1
  kl rmsnorm bench rmsnorm --device cpu --torch=torch_native --shape 2048x4096 --dtype f32,bf16 --repeat 3 --seed 1
  kl matmul bench matmul --device cpu --torch=torch_native --shape 1024x1024x1024 --shape 2048x2048x2048 \
    --dtype f32,bf16 --seed 1
  kl linear bench linear --device cpu --torch=torch_native --activation gelu-tanh --shape 1024x1024x1024 \
    --dtype f32,bf16 --seed 1
}

section_cpu() {
  kl softmax bench softmax --device cpu --variants fused --dtype f32,bf16,f16 --shape 2048x1024 \
    --shape 256x65536 --shape 1x4194304 --seed 1
  kl linear bench linear --device cpu --variants faer --shape 1024x1024x1024 --activation gelu-erf --seed 1
}

if [[ ${1:-} == --list ]]; then
  printf '%s\n' "${SECTIONS[@]}"
  exit 0
fi
[[ -x $K ]] || { echo "no kernlab binary at $K (build it, or set KERNLAB)" >&2; exit 1; }

todo=("$@")
[[ ${#todo[@]} -gt 0 ]] || todo=("${SECTIONS[@]}")
for s in "${todo[@]}"; do
  [[ " ${SECTIONS[*]} " == *" $s "* ]] || { echo "unknown section: $s (see --list)" >&2; exit 2; }
done

mkdir -p "$KERNLAB_CACHE_DIR"
for s in "${todo[@]}"; do
  D="$OUT/$s"
  mkdir -p "$D"
  echo "== $s ($(date -u +%H:%M:%S) UTC)" >&2
  start=$SECONDS
  "section_$s"
  echo "== $s done in $((SECONDS - start)) s; output in $D" >&2
done
