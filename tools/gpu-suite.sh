#!/usr/bin/env bash
# The GPU test suite, on the GPU machine, in one call: every test executable that
# ../shared/gpu/pack gathered in .gpu/tests, 6 test threads each (the GPU tests share the
# card; one thread each takes past one call's 10 minutes), the GPU tests included (they are
# #[ignore]d for machines without a GPU), with KERNLAB_REQUIRE_GPU=1 so that a GPU test that
# finds no GPU fails instead of skipping. Prints the failures and the wall time;
# exits non-zero if any test fails. The full log goes to ${OUT:-out}/gpu-suite.log.
#
# KERNLAB_NCCL points at the libnccl.so.2 of python3's nvidia-nccl wheel (PyTorch's) unless set.
# Where .gpu/wheels holds the kernlab wheel, it is installed first into a folder of its own on
# PYTHONPATH, beside the machine's torch; python3 then runs the Python package's tests
# (python/tests) on CUDA too, and the baselines of `bench --torch`, whose kernlab_do_bench
# column so calls the same build as the test executables.
#
#   ../shared/gpu/pack                              (here: build and gather the executables)
#   maturin build --release -m python/Cargo.toml -o .gpu/wheels   (here: the wheel)
#   tools/gpu-suite.sh [--threads N] [TEST-FILTER]  (there, with .gpu carried)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-out}
mkdir -p "$OUT"
log="$OUT/gpu-suite.log"
export KERNLAB_REQUIRE_GPU=1
threads=6
if [ "${1:-}" = "--threads" ]; then
  threads=${2:-}
  case "$threads" in ''|*[!0-9]*|0) echo "--threads takes a whole number ≥ 1" >&2; exit 2 ;; esac
  shift 2
fi
[ -d .gpu/tests ] || { echo "no .gpu/tests: run ../shared/gpu/pack first and carry .gpu" >&2; exit 2; }
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
start=$(date +%s)
status=0
: > "$log"
wheel=$(ls .gpu/wheels/kernlab-*.whl 2>/dev/null | head -1)
if [ -n "$wheel" ]; then
  pkg=${TMPDIR:-/tmp}/kernlab-gpu-package
  rm -rf "$pkg"
  python3 -m pip install --quiet --no-deps --no-index --target "$pkg" "$wheel" >> "$log" 2>&1 \
    || { echo "could not install $wheel (the log says why)"; status=1; }
  export PYTHONPATH="$pkg${PYTHONPATH:+:$PYTHONPATH}" KERNLAB_PYTHON=python3
fi
# NCCL, for the collectives' tests: PyTorch's wheel brings libnccl.so.2 (nvidia-nccl-cu13),
# outside the loader's path.
if [ -z "${KERNLAB_NCCL:-}" ]; then
  nccl=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so.2'))" 2>/dev/null)
  [ -f "$nccl" ] && export KERNLAB_NCCL="$nccl"
fi
for t in .gpu/tests/*; do
  echo "== $t" >> "$log"
  "$t" --test-threads="$threads" --include-ignored "$@" >> "$log" 2>&1 || status=1
done
if [ -n "$wheel" ] && [ $# -eq 0 ]; then
  echo "== python/tests" >> "$log"
  "$KERNLAB_PYTHON" -m pytest -q -p no:cacheprovider python/tests >> "$log" 2>&1 || status=1
  grep -E "^(FAILED|ERROR) " "$log" | head -20
  py=$(grep -oE "[0-9]+ passed" "$log" | tail -1)
  echo "python/tests: ${py:-no result}"
fi
wall=$(( $(date +%s) - start ))
grep -E "^test .* (FAILED|failed)$|panicked at" "$log" | head -40
passed=$(grep -oE "test result: [a-zA-Z]+\. [0-9]+ passed" "$log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -oE "; [0-9]+ failed" "$log" | awk '{s+=$2} END {print s+0}')
echo "gpu suite: $passed passed, $failed failed, ${wall}s (log: $log)"
exit $status
