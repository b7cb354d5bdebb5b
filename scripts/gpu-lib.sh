# Sourced by the GPU batch scripts (run from the repository root on the GPU machine):
# $OUT (where a script writes its files), the kernel cache, $K (the kernlab binary), $S (the
# summary file printed last), `el`, which appends the seconds since the start and a label to
# $S, `tab`, `vtab`, `gpu_tests`, `ttab`, `done_table`, `bench_points`, `gpu_start`, `done_sweep`,
# `sweep_summary`, `ustab`, `stab` and `settled_pass` (below).
# The device tool brings back only a few files from its $OUT (the twentieth session lost a
# run's table and test log to that), so the scripts write to a work folder, and what comes
# back is $S and files.tgz, every file of the work folder, packed again at each `el` and on
# exit (so a run killed by its time limit still returns what it had at its last `el`):
# `tar -xzf files.tgz` here.
set -uo pipefail
RET=${OUT:-/tmp/kernlab-out}; mkdir -p "$RET"
OUT=/tmp/kernlab-work; rm -rf "$OUT"; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
S="$RET/summary.txt"
pack_out() { tar -czf /tmp/kernlab-files.tgz -C "$OUT" . 2>/dev/null && cp /tmp/kernlab-files.tgz "$RET/files.tgz"; }
trap pack_out EXIT
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$S"; pack_out; }
# `tab CSV`: one line of a bench/sweep CSV's points, dtype:cols=GB/s (or the status when not ok).
tab() { python3 -c "
import csv,sys
print(*[r['dtype']+':'+r['cols']+'='+(str(round(float(r['gbps']))) if r['status']=='ok' else r['status'][:12]) for r in csv.DictReader(open('$1'))])"; }
# `vtab CSV [PREFIX]`: as `tab`, each point led by PREFIX and its variant's first three letters,
# variant:dtype:cols=GB/s; a CSV that cannot be read prints its error.
vtab() { python3 - "$1" "${2:-}" <<'PY'
import csv, sys
try: rs = list(csv.DictReader(open(sys.argv[1])))
except Exception as e: print(sys.argv[1], e); sys.exit()
print(*[sys.argv[2] + r['variant'][:3] + ':' + r['dtype'] + ':' + r['cols'] + '=' + (str(round(float(r['gbps']))) if r['status'] == 'ok' else r['status'][:10]) for r in rs])
PY
}
# `gpu_tests SECONDS [FILTER]`: the GPU test executables (.gpu/run-tests, with
# KERNLAB_REQUIRE_GPU=1 and KERNLAB_REQUIRE_NVRTC=1; variables set before the call reach them
# too) into $OUT/tests-FILTER.log (tests-all.log without one); their totals and first failures
# to $S.
gpu_tests() {
  local secs=$1 what=${2:-all}; shift
  local log="$OUT/tests-$what.log"
  KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout "$secs" .gpu/run-tests "$@" > "$log" 2>&1
  echo "run-tests $what: exit $? $(awk '/^test result/ {p+=$4; f+=$6} END {print p" passed "f" failed"}' "$log")" >> "$S"
  grep -E "^test .*FAILED|panicked" "$log" | head -5 | cut -c1-300 >> "$S"
}
# `ttab JSON`: one line of a baselines/torch_baselines.py JSON's records,
# variant:dtype:cols=GB/s (or the status when not timed).
ttab() { python3 - "$1" <<'PY'
import json, sys
def walk(o):
    if isinstance(o, dict):
        if "variant" in o and "gbps" in o:
            yield o
        for v in o.values():
            yield from walk(v)
    elif isinstance(o, list):
        for v in o:
            yield from walk(v)
print(*[f"{r['variant']}:{r['dtype']}:{r['shape'][-1]}=" + (str(round(r["gbps"])) if r["gbps"] else str(r.get("status")))
        for r in walk(json.load(open(sys.argv[1])))])
PY
}
# `done_table SWEEP_CSV [STREAM_CSV]`: the done-means sweep as one line a (dtype, cols, rows)
# point: GB/s of auto, the PyTorch and Triton columns, the stream (GeLU's same shapes) where
# that CSV exists, and auto's pick.
done_table() { python3 - "$@" <<'PY'
import csv, os, sys
t, pick = {}, {}
for r in csv.DictReader(open(sys.argv[1])):
    k = (r["dtype"], int(r["cols"]), int(r["rows"]))
    t.setdefault(k, {})[r["variant"]] = f'{float(r["gbps"]):.0f}' if r["status"] == "ok" else r["status"][:6]
    if r["variant"] == "auto": pick[k] = r.get("picked", "")
if len(sys.argv) > 2 and os.path.exists(sys.argv[2]):
    for r in csv.DictReader(open(sys.argv[2])):
        k = (r["dtype"], int(r["cols"]), int(r["rows"]))
        if k in t: t[k]["stream"] = f'{float(r["gbps"]):.0f}' if r["status"] == "ok" else r["status"][:6]
vs = ["auto", "kernlab_do_bench", "torch_native", "torch_compile", "triton", "stream"]
seen = {v for k in t for v in t[k]}
vs = [v for v in vs if v in seen] + sorted(seen - set(vs))
print("dtype cols rows", *vs, "pick")
for k in sorted(t): print(*k, *[t[k].get(v, "-") for v in vs], pick.get(k, ""))
PY
}
# `ptab CSV [PREFIX]`: as `vtab`, with a dispatching variant's pick: PREFIX dtype:cols=GB/s(pick).
ptab() { python3 - "$1" "${2:-}" <<'PY'
import csv, sys
try: rs = list(csv.DictReader(open(sys.argv[1])))
except Exception as e: print(sys.argv[1], e); sys.exit()
print(sys.argv[2], *[r['dtype'] + ':' + r['cols'] + '=' + (str(round(float(r['gbps']))) if r['status'] == 'ok' else r['status'][:10]) + '(' + r.get('picked', '')[:2] + ')' for r in rs])
PY
}
# `rtab CSV [PREFIX]`: as `ptab`, with the rows: PREFIX var:rowsxcols=GB/s(pick), the variant's
# and the pick's first three letters.
rtab() { python3 - "$1" "${2:-}" <<'PY'
import csv, sys
try:
    rs = list(csv.DictReader(open(sys.argv[1])))
    print(sys.argv[2], *[r['variant'][:3] + ':' + r['rows'] + 'x' + r['cols'] + '=' + (str(round(float(r['gbps']))) if r['status'] == 'ok' else r['status'][:10]) + '(' + r.get('picked', '')[:3] + ')' for r in rs])
except Exception as e: print(sys.argv[2], sys.argv[1], e)
PY
}
# `stab CSV PREFIX`: as `tab`, each point's settled median in µs (its status and note where it
# has none): PREFIX dtype:cols=µs.
stab() { python3 - "$1" "$2" <<'PY'
import csv, sys
print(sys.argv[2], *[r['dtype'] + ':' + r['cols'] + '=' + (f"{float(r['settled_ms'])*1e3:.2f}" if r['status'] == 'ok' and r['settled_ms'] else r['status'][:10] + ' ' + (r['note'] or '')[:80]) for r in csv.DictReader(open(sys.argv[1]))])
PY
}
# `bench_points NAME SHAPES VARIANTS [DTYPE] [VAR=value ...]`: one softmax bench process
# (rotated, 30 ms, seed 1) of VARIANTS over SHAPES (space-separated RxC), as DTYPE (f32 when
# the fourth argument is missing or a VAR=value), with the variables given, into
# $OUT/NAME.csv and .log; its points (`rtab`) appended to $S.
bench_points() {
  local n=$1 shapes=$2 vars=$3 dt=f32; shift 3
  if [ $# -gt 0 ] && [[ $1 != *=* ]]; then dt=$1; shift; fi
  local args=() s
  for s in $shapes; do args+=(--shape "$s"); done
  timeout 120 env "$@" $K bench softmax --dtype "$dt" "${args[@]}" --variants "$vars" --rep-ms 30 \
    --rotate auto --seed 1 --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1
  rtab "$OUT/$n.csv" "$n" >> "$S"
}
# `gpu_start`: the GPU's name, clocks and temperature to $S, then a small bench that measures
# and caches the copy and matmul ceilings, so that the runs after it find them cached.
gpu_start() {
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
  timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1
}
# `done_sweep DTYPE SECONDS`: issue 5's done-means sweep (4096 rows, 32 to 4 Mi columns, up to
# 2^31 elements a point, `auto` with --torch, both sides rotated) as DTYPE, into
# $OUT/softmax-sweep-done-DTYPE.{csv,svg} and $OUT/sweep.log; its exit status to $S.
done_sweep() {
  timeout "$2" $K sweep softmax --rows 4096 --cols 32..4194304:x2,33,255,1000,4097,12345,16385,65537,300007,1048577 --max-elements 2^31 --dtype "$1" --variants auto --torch --rep-ms 30 --rotate auto --plot "$OUT/softmax-sweep-done-$1.svg" --csv "$OUT/softmax-sweep-done-$1.csv" > "$OUT/sweep.log" 2>&1
  echo "sweep exit $?" >> "$S"
}
# `sweep_summary DTYPE`: after `done_sweep DTYPE` (or a sweep writing the same files), to $S:
# the copy ceiling, the verdict's lines (both wordings the second line has had), each
# PyTorch-side and replayed call's do_bench and queued medians in µs (and "hb" where
# host-bound), every call's settled median where it has one ("s"), and `done_table`.
sweep_summary() {
  local csv="$OUT/softmax-sweep-done-$1.csv"
  grep -m1 -i "copy ceiling" "$OUT/sweep.log" | cut -c1-200 >> "$S"
  grep "against PyTorch native\|against their GPU times\|against their queued times\|against their settled times" "$OUT/sweep.log" | cut -c1-900 >> "$S"
  python3 - "$csv" <<'PY' >> "$S"
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r['variant'] in ('torch_native', 'torch_compile', 'kernlab_do_bench') and r.get('queued_ms'):
        print('q', r['variant'], r['cols'], round(float(r['median_ms']) * 1e3, 2), round(float(r['queued_ms']) * 1e3, 2), 'hb' if 'host-bound' in (r['note'] or '') else '')
    if r.get('settled_ms'):
        print('s', r['variant'], r['cols'], round(float(r['median_ms']) * 1e3, 2), round(float(r['settled_ms']) * 1e3, 2))
PY
  done_table "$csv" >> "$S"
}
# `ustab CSV`: a bench CSV's points as µs a call, a line a (dtype, shape): auto,
# kernlab_do_bench, torch_native, torch_compile, triton (the status where not timed), then
# the replay's, native's and compile's queued medians (`queued_ms`: their GPU times; "-" where
# not taken).
ustab() { python3 - "$1" <<'PY'
import csv, sys
t = {}
for r in csv.DictReader(open(sys.argv[1])):
    k = (r["dtype"], r["shape"])
    t.setdefault(k, {})[r["variant"]] = (f"{float(r['median_ms'])*1000:.2f}" if r["status"] == "ok" else r["status"][:8])
    if r.get("queued_ms"):
        t[k][r["variant"] + "_q"] = f"{float(r['queued_ms'])*1000:.2f}"
vs = ["auto", "kernlab_do_bench", "torch_native", "torch_compile", "triton", "kernlab_do_bench_q", "torch_native_q", "torch_compile_q"]
print("dtype shape", *vs)
for k in sorted(t): print(*k, *[t[k].get(v, "-") for v in vs])
PY
}
# `settled_pass NAME "SHAPES" [VAR=VALUE ...]`: `auto` with `--torch --rotate auto` at each
# softmax SHAPE in bf16 and f32, with the variables set; to $S each point's do_bench/settled
# median in µs for `auto`, its replay in PyTorch's process, native and compile (runs 140, 153).
settled_pass() {
  local n=$1 shapes=$2 DT s args=(); shift 2
  for s in $shapes; do args+=(--shape "$s"); done
  for DT in bf16 f32; do
    timeout 100 env "$@" $K bench softmax "${args[@]}" --dtype $DT --variants auto --torch --rotate auto --rep-ms 20 --seed 1 --csv "$OUT/$n-$DT.csv" > "$OUT/$n-$DT.log" 2>&1
    echo "$n $DT exit $?" >> "$S"; grep -i "error\|fail" "$OUT/$n-$DT.log" | head -3 >> "$S"
    python3 - "$OUT/$n-$DT.csv" "$n" >> "$S" <<'PY'
import csv, sys
t = {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["status"] == "ok" and r.get("settled_ms"):
        t.setdefault((r["dtype"], int(r["cols"])), {})[r["variant"].replace("torch_", "")[:8]] = f'{float(r["median_ms"])*1e3:.2f}/{float(r["settled_ms"]) * 1e3:.2f}'
    elif r["status"] != "ok": print("not ok:", r["variant"], r["cols"], r["status"], r["note"][:200])
print(sys.argv[2], *[f"{d}:{c} " + " ".join(f"{v}={t[(d,c)][v]}" for v in ("auto", "kernlab_", "native", "compile") if v in t[(d,c)]) for d, c in sorted(t)])
PY
  done
  el "$n"
}
