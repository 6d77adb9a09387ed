#!/usr/bin/env bash
# Call NV (docs/PERFORMANCE.md "v50"), ON the GPU machine from the repo root (~4 min; written for
# the last ~300 s of a session's device time):
#   bash .gpu/call_nv.sh
# Here first: bash tests/gpu/prepare_ab.sh main exp/norm-vec2 (.gpu/a = main v49, .gpu/bin = v50);
# carry .gpu/ab.tar.xz and .gpu/call_nv.sh.
# 1. v50: the 3B's and 1B's logits at 1, 32, 1024 bit-identical to main (call_logits: GPU = CPU at
#    context 1 too, a FAIL line if not).
# 2. Bench windows (cut at 200 and 240 s), 3 interleaved blocks: the 3B at 1 / 4096, the 1B at 1; main against v50.
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=llama3b_shape,llama1b_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
CALL_MODELS=llama3b_shape,llama1b_shape call_logits a=.gpu/a n=.gpu/bin
timeout $((200 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=n=.gpu/bin \
  --models=llama3b_shape --contexts=1,4096 --blocks=3 --out_dir="$OUT/bench_3b" | tee "$OUT/summary_3b.txt"
echo "bench 3B rc=${PIPESTATUS[0]} at ${SECONDS}s"
timeout $((240 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=n=.gpu/bin \
  --models=llama1b_shape --contexts=1 --blocks=3 --out_dir="$OUT/bench_1b" | tee "$OUT/summary_1b.txt"
echo "bench 1B rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_nv .gpu/call_nv.sh
