#!/usr/bin/env bash
# Call V51B (docs/PERFORMANCE.md "Call V51B"), ON the GPU machine from the repo root, a fresh start
# (~5 min): v51 against main on a second start, bench windows of the 1B and SmolLM2 at 1 / 1024 /
# 4096 and the 3B at 1 / 4096.
#   bash .gpu/call_v51b.sh
# Here first: the archive of call V51 (.gpu/a = main, .gpu/bin = exp/norm-staged), or
# bash tests/gpu/prepare_ab.sh main exp/norm-staged; cp docs/experiments/next/call_v51b.sh .gpu/;
# carry .gpu/ab.tar.xz and .gpu/call_v51b.sh. Every line is also in call.log ($OUT/call_v51b.tgz).
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=llama1b_shape,smollm2_shape,llama3b_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
timeout $((330 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama1b_shape,smollm2_shape --contexts=1,1024,4096 --blocks=3 --out_dir="$OUT/bench_small" |
  tee "$OUT/summary_small.txt"
echo "bench 1B/SmolLM2 rc=${PIPESTATUS[0]} at ${SECONDS}s"
timeout $((450 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama3b_shape --contexts=1,4096 --blocks=3 --out_dir="$OUT/bench_3b" | tee "$OUT/summary_3b.txt"
echo "bench 3B rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v51b .gpu/call_v51b.sh
