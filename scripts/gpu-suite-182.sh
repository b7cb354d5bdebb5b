#!/usr/bin/env bash
# GPU batch (thirty-seventh session), one call (~7 min): the GPU suite on the session's final
# code (the kernels of 17beeee), less v11's own test, which runs 178-181 passed on forms whose
# default kernels were the same (run 181's: the same PTX instructions). The thirty-sixth
# session's review mends (its test helpers, last_cta_out, mbar_wait, the trace tools' path)
# had not run on the GPU.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
gpu_tests 400 --skip softmax_v11
el tests
tail -3 "$OUT/tests---skip.log" >> "$S"
grep -c "^test .* ok$" "$OUT/tests---skip.log" >> "$S"
cat "$S"
