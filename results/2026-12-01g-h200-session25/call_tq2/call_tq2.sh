#!/usr/bin/env bash
# Call TQ2 (docs/PERFORMANCE.md "Call TQ2"), ON the GPU machine from the repo root (~8 min), call
# TQ's builds (.gpu/ab.tar.xz: .gpu/a = main, .gpu/bin = v49) on a second machine start:
#   bash .gpu/call_tq2.sh
# 1. The 8B shape: logits at contexts 1, 32, 1024 of v49 against main bit for bit; the 3B's too.
# 2. Traces at context 32 of both builds, 3B and 8B (the QKV task's median).
# 3. Bench windows, 3 interleaved blocks, main against v49: the 3B and the 8B at 1 / 4096.
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=llama3b_shape,llama8b_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
CALL_MODELS=llama3b_shape,llama8b_shape call_logits a=.gpu/a t=.gpu/bin
echo "logits at ${SECONDS}s"
for m in llama3b_shape llama8b_shape; do
  call_trace .gpu/a a $m 32
  call_trace .gpu/bin t $m 32
done
echo "traces at ${SECONDS}s"
timeout $((570 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=t=.gpu/bin \
  --models=llama3b_shape,llama8b_shape --contexts=1,4096 --blocks=3 --out_dir="$OUT/bench" | tee "$OUT/summary.txt"
echo "bench rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_tq2 .gpu/call_tq2.sh
