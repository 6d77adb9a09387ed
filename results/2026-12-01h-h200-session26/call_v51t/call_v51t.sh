#!/usr/bin/env bash
# Call V51T (docs/PERFORMANCE.md "v51t"), ON the GPU machine from the repo root (~4 min): v51 in a
# second compilation of the worker (exp/norm-two-kernels) against main.
#   bash .gpu/call_v51t.sh
# Here first: .gpu/ab.tar.xz with .gpu/a = main and .gpu/bin = exp/norm-two-kernels
# (bash tests/gpu/prepare_ab.sh main exp/norm-two-kernels); cp docs/experiments/next/call_v51t.sh .gpu/;
# carry .gpu/ab.tar.xz and .gpu/call_v51t.sh. Every line is also in call.log ($OUT/call_v51t.tgz).
# 1. Correct: tiny_h2304 (the wide kernel) and tiny_9x3 (the narrow one) GPU = CPU, 3 x 200 tokens
#    bit-identical; memcheck of tiny_h2304; the 1B's and SmolLM2's logits bit-identical to main; the
#    3B GPU = CPU at context 1.
# 2. Bench windows: the 1B and SmolLM2 at 1024 / 4096 (where v51 cost them 1.1-1.4%), the 3B at 1.
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_h2304,tiny_9x3,llama1b_shape,smollm2_shape,llama3b_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
for m in tiny_h2304 tiny_9x3; do
  timeout 40 .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1,2,17,100,383 --runs=3 --tokens=200 \
    > "$OUT/gpu_check_$m.txt" 2>&1
  echo "$m: rc=$? $(grep -cE 'FAIL' "$OUT/gpu_check_$m.txt") FAIL lines; $(tail -1 "$OUT/gpu_check_$m.txt")"
done
CALL_SECONDS=$SECONDS SAN_DEADLINE=200 bash tests/gpu/sanitize_one.sh bin memcheck tiny_h2304
CALL_MODELS=llama1b_shape,smollm2_shape call_logits a=.gpu/a v=.gpu/bin
timeout 40 .gpu/bin/gpu_check --package="$W/llama3b_shape.tpkg" --contexts=1 --cpu_contexts=1 --runs=0 \
  --sampling_checks=0 --check_target=false 2>&1 | grep -E "rel|PASS|FAIL"
echo "checks at ${SECONDS}s"
timeout $((200 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama1b_shape,smollm2_shape --contexts=1024,4096 --blocks=3 --out_dir="$OUT/bench_small" |
  tee "$OUT/summary_small.txt"
echo "bench 1B/SmolLM2 rc=${PIPESTATUS[0]} at ${SECONDS}s"
timeout $((235 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama3b_shape --contexts=1 --blocks=3 --out_dir="$OUT/bench_3b" | tee "$OUT/summary_3b.txt"
echo "bench 3B rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v51t .gpu/call_v51t.sh
