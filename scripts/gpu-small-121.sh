#!/usr/bin/env bash
# GPU batch (twenty-sixth session, commit after 4781ef4, same kernels): run 120's bf16 sweep had
# torch.compile ahead of `auto` at bf16 32–256 (bf16 64: 239 against 189 GB/s), where the
# twenty-second session's sweep had it at 13–16. Kernel or call? ncu's kernel durations (caches
# flushed before each kernel, clocks left alone) of kernlab's v2 and of Inductor's fused softmax
# kernel, with their grids, blocks and registers; then Inductor's generated kernel source.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
SEC="--cache-control all --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread"
med() { python3 - "$1" <<'PY'
import re, sys, statistics
t, g, b, r = [], set(), set(), set()
for l in open(sys.argv[1]):
    f = l.split()
    if "gpu__time_duration" in l: t.append(float(f[-1].replace(",", "")))
    elif "launch__grid_size" in l: g.add(f[-1])
    elif "launch__block_size" in l: b.add(f[-1])
    elif "launch__registers_per_thread" in l: r.add(f[-1])
print(f"{len(t)} kernels, median {statistics.median(t) if t else 0:.2f} us, min {min(t) if t else 0:.2f}; grid {sorted(g)} block {sorted(b)} regs {sorted(r)}")
PY
}
cat > "$OUT/compiled.py" <<'PY'
import sys, torch
sys.path.insert(0, "baselines")
from torch_baselines import manual_softmax
dt = {"f32": torch.float32, "bf16": torch.bfloat16}[sys.argv[1]]
cols = int(sys.argv[2])
def manual(x):
    y = manual_softmax(torch, x.float())
    return y.to(x.dtype) if x.dtype != torch.float32 else y
f = torch.compile(manual, dynamic=False)
xs = [torch.randn(4096, cols, device="cuda", dtype=dt) for _ in range(4)]
for i in range(int(sys.argv[3])): y = f(xs[i % 4])
torch.cuda.synchronize()
PY
for p in bf16:64 bf16:256 f32:256 bf16:32 f32:512; do
  dt=${p%%:*}; c=${p##*:}
  timeout 90 ncu $SEC -k regex:softmax_v2 -c 15 $K bench softmax --shape 4096x$c --dtype $dt --variants v2_warp_row --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-kl-$dt-$c.txt" 2>&1
  echo "kernlab v2 $dt 4096x$c: $(med "$OUT/ncu-kl-$dt-$c.txt")" >> "$S"
  timeout 150 ncu $SEC -k regex:triton --launch-skip 40 -c 15 python3 "$OUT/compiled.py" $dt $c 80 > "$OUT/ncu-ind-$dt-$c.txt" 2>&1
  echo "inductor $dt 4096x$c: $(med "$OUT/ncu-ind-$dt-$c.txt") $(grep -m1 -o 'triton_[a-zA-Z0-9_]*' "$OUT/ncu-ind-$dt-$c.txt" | head -1)" >> "$S"
  el "$p"
done
for p in bf16:64 f32:256; do
  TORCH_LOGS=output_code timeout 120 python3 "$OUT/compiled.py" ${p%%:*} ${p##*:} 3 > "$OUT/code-${p/:/-}.txt" 2>&1
done
el code
cat "$S"
