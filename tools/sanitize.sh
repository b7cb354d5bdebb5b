#!/usr/bin/env bash
# compute-sanitizer's four tools over every CUDA variant of every op, every dtype, at awkward
# shapes, on the GPU machine, in one call. Each case is `kernlab bench OP --check-only`
# (every variant validated twice against the f64 reference, nothing timed) under one tool:
#
#   memcheck   out-of-bounds and misaligned accesses, device-heap checks (--check-device-heap)
#   racecheck  shared-memory hazards (with cp.async / memcpy_async tracking where the tool has it)
#   synccheck  invalid barrier use (bar.sync in divergent code, mismatched barrier counts)
#   initcheck  reads of device memory that was never written
#
# Shapes: rows 1×1, 1×4097, 3×65537, 1823×781, 2×1048577 (wide enough for softmax's clusters,
# split rows and dealt chunks), strided rows (softmax, --row-stride 789: a 16-bit row then
# starts off a 16-byte boundary); GEMMs 1×1×1 and 129×257×65 under every tool, and
# 4095×4097×4093 under memcheck (the others' per-access costs make it minutes a variant: the
# small GEMMs already have partial tiles on every edge); the MLP forward and training step at
# 1×8 and 129×264 with 3 layers.
#
# One process per (tool, op, shape set), the four tools in parallel. A process with findings is
# run again one variant at a time, so that each finding is pinned on its variant. Prints one
# line per (tool, variant): errors found and the first report, if any; exits non-zero when any
# tool found anything (or a case failed validation, or ran out of time).
#
#   ../shared/gpu/pack                           (here: build, gather .gpu)
#   tools/sanitize.sh [--budget SECONDS] [--tools memcheck,racecheck] [--ops softmax,gelu]
#
# Logs and the summary go to ${OUT:-out}/sanitize/. The NVRTC cache is a private one there,
# and autotuning is left alone: nothing measured under a sanitizer is kept.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

budget=540
tools="memcheck,racecheck,synccheck,initcheck"
ops="gelu,softmax,rmsnorm,matmul,linear,mlp"
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget=$2; shift 2 ;;
    --tools) tools=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

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
start=$(date +%s)
deadline=$((start + budget))

rows="--shape 1x1 --shape 1x4097 --shape 3x65537 --shape 1823x781 --shape 2x1048577"
gemm_small="--shape 1x1x1 --shape 129x257x65"
mlp_shapes="--shape 1x8 --shape 129x264 --layers 3"

# The cases of an op under a tool: "name|arguments", one a line.
cases() {
  local op=$1 tool=$2
  case "$op" in
    gelu|rmsnorm) echo "rows|$rows" ;;
    softmax)
      echo "rows|$rows"
      echo "strided|--shape 1823x781 --row-stride 789"
      echo "strided_wide|--shape 3x65537 --row-stride 65545" ;;
    matmul|linear)
      echo "small|$gemm_small"
      [ "$tool" = memcheck ] && echo "large|--shape 4095x4097x4093" ;;
    mlp)
      echo "forward|$mlp_shapes --mode forward"
      echo "train|$mlp_shapes --mode train" ;;
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

# One case: kernlab under the tool. Writes the log and the JSON; prints nothing.
run_case() {
  local tool=$1 op=$2 name=$3 args=$4 variants=$5 tag=$6
  local left=$((deadline - $(date +%s)))
  local log="$dir/logs/$tool-$op-$name$tag.log" json="$dir/json/$tool-$op-$name$tag.json"
  if [ "$left" -le 5 ]; then echo "NOT RUN: out of time" > "$log"; return; fi
  local vflag=()
  [ -n "$variants" ] && vflag=(--variants "$variants")
  # shellcheck disable=SC2086
  timeout --signal=INT --kill-after=10 "$left" \
    compute-sanitizer $(tool_args "$tool") --error-exitcode 99 --print-limit 3 \
      --show-backtrace no \
      "$KL" bench "$op" --check-only --device cuda --dtype all $args "${vflag[@]}" \
      --json "$json" > "$log" 2>&1
  echo "EXIT $?" >> "$log"
}

# The CUDA variants of an op (kernlab list --json).
cuda_variants() {
  "$KL" list --json 2>/dev/null | python3 -c '
import json, sys
op = sys.argv[1]
print(" ".join(r["variant"] for r in json.load(sys.stdin) if r["op"] == op and r["device"] == "cuda"))' "$1"
}

errors_in() { grep -oE "ERROR SUMMARY: [0-9]+" "$1" 2>/dev/null | awk '{s+=$3} END {print s+0}'; }

# A tool's whole share: every op and case, then each variant alone where there were findings.
run_tool() {
  local tool=$1 op name args
  for op in ${ops//,/ }; do
    while IFS='|' read -r name args; do
      [ -n "$name" ] || continue
      run_case "$tool" "$op" "$name" "$args" "" ""
      if [ "$(errors_in "$dir/logs/$tool-$op-$name.log")" -gt 0 ]; then
        for v in $(cuda_variants "$op"); do
          run_case "$tool" "$op" "$name" "$args" "$v" "-$v"
        done
      fi
    done < <(cases "$op" "$tool")
  done
}

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
compute-sanitizer --version | tail -1
# The kernels once without a sanitizer: NVRTC's cache warmed, and a validation failure told
# apart from a sanitizer finding.
for op in ${ops//,/ }; do
  while IFS='|' read -r name args; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086
    "$KL" bench "$op" --check-only --device cuda --dtype all $args \
      --json "$dir/json/plain-$op-$name.json" > "$dir/logs/plain-$op-$name.log" 2>&1
    echo "EXIT $?" >> "$dir/logs/plain-$op-$name.log"
  done < <(cases "$op" memcheck)
done
echo "plain pass: $(( $(date +%s) - start ))s"

for tool in ${tools//,/ }; do
  run_tool "$tool" &
done
wait

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

rows, bad = [], 0
for tool in tools:
    for op in ops:
        for log in sorted(glob.glob(f"{d}/logs/{tool}-{op}-*.log")):
            base = os.path.basename(log)[:-4]
            parts = base.split("-", 2)
            if len(parts) < 3 or "-" in parts[2]:
                continue  # a one-variant rerun: read below
            name = parts[2]
            text, errs, code, first = log_facts(log)
            recs = records(f"{d}/json/{base}.json")
            if text.startswith("NOT RUN") or recs is None:
                why = "out of time" if text.startswith("NOT RUN") or code in (124, 130, 137) else f"no report (exit {code})"
                rows.append((tool, f"{op}/*", name, "NOT RUN", why)); bad += 1
                continue
            by_var = {}
            for r in recs:
                s = by_var.setdefault(r["variant"], {"ok": 0, "unsupported": 0, "other": 0, "notes": []})
                k = r["status"] if r["status"] in ("ok", "unsupported") else "other"
                s[k] += 1
                if k == "other":
                    s["notes"].append(r.get("note") or r["status"])
            for v, s in by_var.items():
                if errs == 0:
                    n, rep = 0, ""
                else:
                    vt, n, vcode, rep = log_facts(f"{d}/logs/{base}-{v}.log")
                    if vt.startswith("NOT RUN"):
                        n, rep = "?", f"the one-variant rerun did not run ({vt[9:].strip()}); the case had {errs}: {first}"
                cases = f"{s['ok']} cases" + (f", {s['unsupported']} refused" if s["unsupported"] else "")
                verdict = f"{n} errors" if n != "?" else "? errors"
                if s["other"]:
                    verdict += f"; {s['other']} FAILED validation: {s['notes'][0][:160]}"
                    bad += 1
                if n != 0:
                    bad += 1
                rows.append((tool, f"{op}/{v}", name, verdict, cases + (f" — {rep}" if rep else "")))

w = max((len(r[1]) for r in rows), default=10)
with open(f"{d}/summary.txt", "w") as f:
    for r in rows:
        line = f"{r[0]:<10} {r[1]:<{w}} {r[2]:<8} {r[3]:<12} {r[4]}"
        print(line)
        f.write(line + "\n")
    tail = f"sanitize: {len(rows)} (tool, variant, case) lines, {bad} with findings or failures, {wall}s"
    print(tail)
    f.write(tail + "\n")
sys.exit(1 if bad else 0)
PY
