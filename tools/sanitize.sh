#!/usr/bin/env bash
# compute-sanitizer's four tools over every CUDA variant of every op, every dtype, at awkward
# shapes, on the GPU machine, in one call. Each job is one variant of one op under one tool:
# `kernlab bench OP --variants V --check-only` (validated twice against the f64 reference on
# fresh random inputs, nothing timed).
#
#   memcheck   out-of-bounds and misaligned accesses, device-heap checks (--check-device-heap)
#   racecheck  shared-memory hazards (with cp.async / memcpy_async tracking where the tool has it)
#   synccheck  invalid barrier use (bar.sync in divergent code, mismatched barrier counts)
#   initcheck  reads of device memory that was never written
#
# Shapes: rows 1×1, 1×4097, 3×65537, 1823×781, and 2×1048577 (wide enough for softmax's split
# rows and dealt chunks; not under racecheck, where one variant takes minutes at that width and
# 3×65537 already needs clusters), strided rows (softmax, --row-stride 789: a 16-bit row then
# starts off a 16-byte boundary); GEMMs 1×1×1, 5×257×72, 129×257×65 and 129×257×72 under
# every tool (K a multiple of 8 for the TMA variants, which refuse K = 65), 4095×4097×4093 and
# 4095×4097×4096 under memcheck, one job a (variant, dtype), the tiled versions only (the
# naive v1 and v2 take minutes there and have no tile edges the small GEMMs miss; the other
# tools' per-access costs make it minutes a variant); the MLP forward and training step at 1×8
# and 129×264 with 3 layers.
#
# Jobs run --jobs at a time (default 8), slowest first. Prints one line per (tool, variant,
# case): errors found and the first report, if any; exits non-zero when any tool found
# anything, a case failed validation, or a job did not finish inside the budget.
#
#   ../shared/gpu/pack                           (here: build, gather .gpu)
#   tools/sanitize.sh [--budget SECONDS] [--jobs N] [--tools memcheck,racecheck] [--ops softmax,gelu]
#
# Logs and the summary go to ${OUT:-out}/sanitize/. The NVRTC cache is a private one there,
# and autotuning is left alone: nothing measured under a sanitizer is kept.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

budget=540
jobs=8
tools="memcheck,racecheck,synccheck,initcheck"
ops="gelu,softmax,rmsnorm,matmul,linear,mlp"
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --tools) tools=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$jobs" in ''|*[!0-9]*|0) echo "--jobs takes a whole number ≥ 1, got '$jobs'" >&2; exit 2 ;; esac

KL=${KERNLAB:-.gpu/bin/kernlab}
[ -x "$KL" ] || KL=target/release/kernlab
[ -x "$KL" ] || { echo "no kernlab binary: run ../shared/gpu/pack (or cargo build --release)" >&2; exit 2; }
command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer is not on PATH" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed to read the reports" >&2; exit 2; }

dir="${OUT:-out}/sanitize"
rm -rf "$dir"
mkdir -p "$dir/logs" "$dir/json"
export KERNLAB_CACHE_DIR="$dir/cache"
export KERNLAB_REQUIRE_GPU=1
# Each job's reference runs on its share of the cores.
cores=$(nproc 2>/dev/null || echo 8)
export RAYON_NUM_THREADS=$(( cores / jobs > 0 ? cores / jobs : 1 ))
start=$(date +%s)
export KL dir deadline=$((start + budget))

rows_narrow="--shape 1x1 --shape 1x4097 --shape 3x65537 --shape 1823x781"
rows_wide="--shape 2x1048577"
gemm_small="--shape 1x1x1 --shape 5x257x72 --shape 129x257x65 --shape 129x257x72"
mlp_shapes="--shape 1x8 --shape 129x264 --layers 3"

# The cases of an op under a tool: "name|arguments|variants (a regex; empty: all)", slowest
# first. racecheck's cost grows with the row, so its wide rows are a case of their own.
cases() {
  local op=$1 tool=$2
  case "$op" in
    gelu|rmsnorm)
      [ "$tool" != racecheck ] && echo "rows_wide|$rows_wide|"
      echo "rows|$rows_narrow|" ;;
    softmax)
      [ "$tool" != racecheck ] && echo "rows_wide|$rows_wide|"
      echo "rows|$rows_narrow|"
      echo "strided|--shape 1823x781 --row-stride 789|"
      echo "strided_wide|--shape 3x65537 --row-stride 65545|" ;;
    matmul|linear)
      if [ "$tool" = memcheck ]; then
        for dt in f32 bf16 f16; do
          echo "large_$dt|--shape 4095x4097x4093 --dtype $dt|v3|v4|v5|v8|auto|cublas|triton|manual"
        done
        for dt in bf16 f16; do
          echo "large_k8_$dt|--shape 4095x4097x4096 --dtype $dt|wgmma|compiled|auto|mma"
        done
      fi
      echo "small|$gemm_small|" ;;
    mlp)
      echo "train|$mlp_shapes --mode train|"
      echo "forward|$mlp_shapes --mode forward|" ;;
  esac
}

tool_args() {
  case "$1" in
    memcheck) echo "--tool memcheck --check-device-heap yes" ;;
    racecheck)
      local a="--tool racecheck --racecheck-report hazard"
      compute-sanitizer --help 2>/dev/null | grep -q -- "--racecheck-memcpy-async" \
        && a="$a --racecheck-memcpy-async yes"
      echo "$a" ;;
    synccheck) echo "--tool synccheck" ;;
    initcheck) echo "--tool initcheck" ;;
  esac
}

# One job: kernlab under the tool (tool "plain": no sanitizer; variant "": all of them).
# Writes the log and the JSON; prints nothing.
run_job() {
  local tool=$1 op=$2 name=$3 variant=$4 args=$5
  local tag="$tool-$op-$name${variant:+-$variant}"
  local log="$dir/logs/$tag.log" json="$dir/json/$tag.json"
  local left=$((deadline - $(date +%s)))
  if [ "$left" -le 5 ]; then echo "NOT RUN: out of time" > "$log"; return; fi
  local vflag=() san=() dflag=(--dtype all)
  [ -n "$variant" ] && vflag=(--variants "$variant")
  [[ "$args" == *--dtype* ]] && dflag=()
  # shellcheck disable=SC2046
  [ "$tool" != plain ] && san=(compute-sanitizer $(tool_args "$tool") --error-exitcode 99
    --print-limit 10 --show-backtrace no)
  # shellcheck disable=SC2086
  timeout --signal=INT --kill-after=10 "$left" \
    "${san[@]}" "$KL" bench "$op" --check-only --device cuda "${dflag[@]}" $args "${vflag[@]}" \
      --json "$json" > "$log" 2>&1
  echo "EXIT $?" >> "$log"
}
export -f run_job tool_args

# The CUDA variants of an op (kernlab list --json).
cuda_variants() {
  "$KL" list --json 2>/dev/null | python3 -c '
import json, sys
op = sys.argv[1]
print(" ".join(r["variant"] for r in json.load(sys.stdin) if r["op"] == op and r["device"] == "cuda"))' "$1"
}

# Runs the job lines on stdin ("tool|op|case|variant|args"), --jobs at a time.
pool() {
  tr '\n' '\0' | xargs -0 -r -P "$jobs" -I{} bash -c 'IFS="|" read -r t o n v a <<< "$1"; run_job "$t" "$o" "$n" "$v" "$a"' _ {}
}

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
compute-sanitizer --version | tail -1

# The kernels once without a sanitizer, every variant of a case in one process: NVRTC's cache
# warmed, and a validation failure told apart from a sanitizer finding.
for op in ${ops//,/ }; do
  while IFS='|' read -r name args _; do
    [ -n "$name" ] && echo "plain|$op|$name||$args"
  done < <(cases "$op" memcheck)
done | pool
echo "plain pass: $(( $(date +%s) - start ))s"

# Then every (tool, op, case, variant), racecheck and the large GEMMs first (the slowest).
{
  for tool in ${tools//,/ }; do
    for op in ${ops//,/ }; do
      variants=$(cuda_variants "$op")
      while IFS='|' read -r name args only; do
        [ -n "$name" ] || continue
        for v in $variants; do
          [ -z "$only" ] || [[ "$v" =~ $only ]] || continue
          rank=2
          [ "$tool" = racecheck ] && rank=0
          [[ "$name" == large* || "$name" == rows_wide ]] && rank=1
          echo "$rank|$tool|$op|$name|$v|$args"
        done
      done < <(cases "$op" "$tool")
    done
  done
} | sort -s -t'|' -k1,1n | cut -d'|' -f2- | pool

python3 - "$dir" "$tools" "$ops" "$(( $(date +%s) - start ))" <<'PY'
import glob, json, os, re, sys
d, tools, ops, wall = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(","), sys.argv[4]

def log_facts(path):
    text = open(path, errors="replace").read() if os.path.exists(path) else "NOT RUN: no log"
    errs = sum(int(n) for n in re.findall(r"ERROR SUMMARY: (\d+)", text))
    m = re.search(r"EXIT (\d+)", text)
    code = int(m.group(1)) if m else None
    first = ""
    lines = [l[len("========= "):].strip() for l in text.splitlines() if l.startswith("=========")]
    for i, l in enumerate(lines):
        if l and not l.startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY",
                                   "Program hit", "Target application", "Saved host")):
            first = " / ".join(x for x in lines[i:i + 2] if x)
            break
    return text, errs, code, first

def records(path):
    try:
        return json.load(open(path))["records"]
    except Exception:
        return None

rows, bad, plain_fail = [], 0, []
for log in sorted(glob.glob(f"{d}/logs/plain-*.log")):
    text, _, code, _ = log_facts(log)
    if code != 0:
        plain_fail.append(f"{os.path.basename(log)[6:-4]} (exit {code})")
for tool in tools:
    for op in ops:
        for log in sorted(glob.glob(f"{d}/logs/{tool}-{op}-*.log")):
            base = os.path.basename(log)[:-4]
            _, _, name, variant = base.split("-", 3)
            text, errs, code, first = log_facts(log)
            recs = records(f"{d}/json/{base}.json")
            if text.startswith("NOT RUN") or code in (124, 130, 137):
                rows.append((tool, f"{op}/{variant}", name, "NOT RUN", "out of time")); bad += 1
                continue
            if recs is None:
                why = f"stopped (exit {code}) before its report" + (f" — {first}" if first else "")
                rows.append((tool, f"{op}/{variant}", name, f"{errs} errors", why)); bad += 1
                continue
            s = {"ok": 0, "unsupported": 0, "other": 0, "notes": []}
            for r in recs:
                k = r["status"] if r["status"] in ("ok", "unsupported") else "other"
                s[k] += 1
                if k == "other":
                    s["notes"].append(r.get("note") or r["status"])
            verdict = f"{errs} errors"
            if s["other"]:
                verdict += f"; {s['other']} FAILED validation: {s['notes'][0][:160]}"
            if errs or s["other"]:
                bad += 1
            cases = f"{s['ok']} cases" + (f", {s['unsupported']} refused" if s["unsupported"] else "")
            rows.append((tool, f"{op}/{variant}", name, verdict, cases + (f" — {first}" if errs else "")))

w = max((len(r[1]) for r in rows), default=10)
with open(f"{d}/summary.txt", "w") as f:
    def out(line):
        print(line)
        f.write(line + "\n")
    for r in rows:
        out(f"{r[0]:<10} {r[1]:<{w}} {r[2]:<12} {r[3]:<12} {r[4]}")
    if plain_fail:
        out("without a sanitizer, these failed: " + ", ".join(plain_fail))
    checked = sum(1 for r in rows if r[3] != "NOT RUN")
    out(f"sanitize: {len(rows)} (tool, variant, case) jobs, {checked} ran, {bad} with findings, "
        f"failures or out of time, {wall}s")
sys.exit(1 if bad or plain_fail or not rows else 0)
PY
