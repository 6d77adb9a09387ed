#!/usr/bin/env bash
# Call V51T3 (docs/PERFORMANCE.md, "Call V51T3"), ON the GPU machine from the repo root, a fresh
# start (~6 min): v51t (exp/norm-two-kernels) against main on a third machine start, with a same-run
# null: n = main's build run as a second config, placed before a as v is after it.
#   bash .gpu/call_v51t3.sh
# Here first: bash tests/gpu/prepare_ab.sh main exp/norm-two-kernels; cp docs/experiments/next/call_v51t3.sh
# .gpu/; carry .gpu/ab.tar.xz and .gpu/call_v51t3.sh. Every line is also in call.log ($OUT/call_v51t3.tgz).
# 1. The 1B's and SmolLM2's logits bit-identical between main and v51t.
# 2. Bench windows: n, a, v interleaved, 5 blocks, the 1B and SmolLM2 at 1 / 1024 / 4096.
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=llama1b_shape,smollm2_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
CALL_MODELS=llama1b_shape,smollm2_shape call_logits a=.gpu/a v=.gpu/bin
echo "checks at ${SECONDS}s"
timeout $((560 - SECONDS)) python3 py/tools/bench_windows.py --config=n=.gpu/a --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama1b_shape,smollm2_shape --contexts=1,1024,4096 --blocks=5 --out_dir="$OUT/bench_small" |
  tee "$OUT/summary_small.txt"
echo "bench rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v51t3 .gpu/call_v51t3.sh
