#!/usr/bin/env bash
# Call V51T2 (docs/PERFORMANCE.md, Next of the twenty-sixth session, item 2), ON the GPU machine from
# the repo root, a fresh start (~9 min): v51t (exp/norm-two-kernels: v51's norm in a second worker
# kernel for hidden sizes above 2,048) against main on a second machine start (call V51T was the first).
#   bash .gpu/call_v51t2.sh
# Here first: bash tests/gpu/prepare_ab.sh main exp/norm-two-kernels; cp docs/experiments/next/call_v51t2.sh
# .gpu/; carry .gpu/ab.tar.xz and .gpu/call_v51t2.sh. Every line is also in call.log ($OUT/call_v51t2.tgz).
# 1. Correct: tiny_h2304 (the wide kernel) and tiny_9x3 (the narrow one) GPU = CPU, 10 x 500 tokens
#    bit-identical; memcheck and synccheck of tiny_h2304; the 1B's and SmolLM2's logits bit-identical to
#    main; the 3B and 8B GPU = CPU at context 1 (the 8B at 5e-3, call TOL).
# 2. Bench windows: the 1B and SmolLM2 at 1 / 1024 / 4096, the 3B and 8B at 1 / 4096.
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_h2304,tiny_9x3,llama1b_shape,smollm2_shape,llama3b_shape,llama8b_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
for m in tiny_h2304 tiny_9x3; do
  timeout 60 .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1,2,17,100,383,384,385,600 --runs=10 \
    --tokens=500 > "$OUT/gpu_check_$m.txt" 2>&1
  echo "$m: rc=$? $(grep -cE 'FAIL' "$OUT/gpu_check_$m.txt") FAIL lines; $(tail -1 "$OUT/gpu_check_$m.txt")"
done
for tool in memcheck synccheck; do CALL_SECONDS=$SECONDS SAN_DEADLINE=260 bash tests/gpu/sanitize_one.sh bin $tool tiny_h2304; done
CALL_MODELS=llama1b_shape,smollm2_shape call_logits a=.gpu/a v=.gpu/bin
for m in llama3b_shape llama8b_shape; do
  tol=$(bash tests/gpu/gpu_check_tolerance.sh $m)
  timeout 60 .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1 --cpu_contexts=1 --runs=0 --tolerance=$tol \
    --sampling_checks=0 --check_target=false 2>&1 | grep -E "rel|PASS|FAIL"
done
echo "checks at ${SECONDS}s"
timeout $((330 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama1b_shape,smollm2_shape --contexts=1,1024,4096 --blocks=3 --out_dir="$OUT/bench_small" |
  tee "$OUT/summary_small.txt"
echo "bench 1B/SmolLM2 rc=${PIPESTATUS[0]} at ${SECONDS}s"
timeout $((580 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama3b_shape,llama8b_shape --contexts=1,4096 --blocks=3 --out_dir="$OUT/bench_big" | tee "$OUT/summary_big.txt"
echo "bench 3B/8B rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v51t2 .gpu/call_v51t2.sh
