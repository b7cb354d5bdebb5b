#!/usr/bin/env bash
# GPU batch (twenty-fifth session, code of main at the session's start, 0e13e35): f32
# 1024×131072 (TARGETS: ≥ 3900) ran 3803–3816 against 3893–3913 at 4096 rows. Is that the
# last wave? v8 runs a 131072 f32 row as a cluster of two 1024-thread CTAs, 66 rows at once,
# so 1024 rows are 15.5 waves; 990 (15) and 1056 (16) are whole ones. One process a setting,
# two rounds: `auto` (v8, C = 2), v8 forced to clusters of 4 and 8 CTAs sized two an SM
# (KERNLAB_V8=cluster=N,fill=1), v9. Then 8192×4096 (TARGETS: ≥ 4000; v3 ran 3976–3993)
# against v8 and v8 filled. Every point validated before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
W="990x131072 1024x131072 1056x131072 2048x131072"
for r in 1 2; do
  bench_points auto-$r "$W 4096x131072" auto
  bench_points c4f-$r "$W" v8_onchip f32 KERNLAB_V8=cluster=4,fill=1
  bench_points c8f-$r "$W" v8_onchip f32 KERNLAB_V8=cluster=8,fill=1
  bench_points v9-$r "$W" v9_gridsync
  bench_points n-$r "8192x4096 4096x4096" auto,v8_onchip
  bench_points nf-$r "8192x4096 4096x4096" v8_onchip f32 KERNLAB_V8=fill=1
  el round $r
done
cat "$S"
