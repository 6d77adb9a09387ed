#!/usr/bin/env bash
# Call V49B (docs/PERFORMANCE.md, Next of the twenty-fifth session, item 2), ON the GPU machine from
# the repo root, a fresh machine start (~8 min): v49 against v48 on a second start, the 3B, 1B and
# SmolLM2 shapes, bench windows only (call TQ measured v49 on one start; TQ2 ran on that start's
# warm machine).
#   bash .gpu/call_v49b.sh
# Here first: bash tests/gpu/prepare_ab.sh f1d76a0 main (.gpu/a = v48, .gpu/bin = main, v49);
# cp docs/experiments/next/call_v49b.sh .gpu/; carry .gpu/ab.tar.xz and .gpu/call_v49b.sh.
# Every line is also in call.log ($OUT/call_v49b.tgz).
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=llama3b_shape,llama1b_shape,smollm2_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
CALL_MODELS=llama3b_shape,llama1b_shape,smollm2_shape call_logits a=.gpu/a v=.gpu/bin
echo "logits at ${SECONDS}s"
timeout $((300 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama3b_shape --contexts=1,1024,4096 --blocks=3 --out_dir="$OUT/bench_3b" | tee "$OUT/summary_3b.txt"
echo "bench 3B rc=${PIPESTATUS[0]} at ${SECONDS}s"
timeout $((570 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama1b_shape,smollm2_shape --contexts=1,1024,4096 --blocks=3 --out_dir="$OUT/bench_small" |
  tee "$OUT/summary_small.txt"
echo "bench 1B/SmolLM2 rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v49b .gpu/call_v49b.sh
