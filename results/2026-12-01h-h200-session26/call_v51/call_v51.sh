#!/usr/bin/env bash
# Call V51 (docs/PERFORMANCE.md "v51"), ON the GPU machine from the repo root, a fresh start (~9.5
# min): v51 (exp/norm-staged: the RMSNorm above 2,048 by groups of 4, two round trips) against main.
#   bash .gpu/call_v51.sh
# Here first: bash tests/gpu/prepare_ab.sh main exp/norm-staged (.gpu/a = main, .gpu/bin = v51);
# cp docs/experiments/next/call_v51.sh .gpu/; carry .gpu/ab.tar.xz and .gpu/call_v51.sh.
# 1. tiny_h2304 (hidden 2,304: v51's form): GPU = CPU at 1-600, 10 x 500 tokens bit-identical;
#    memcheck and synccheck.
# 2. Logits of the 1B and SmolLM2 (which never take the new form) bit-identical to main.
# 3. v51 on the 3B and 8B: GPU = CPU at context 1 (8B at 5e-3: call TOL), 3 x 32 tokens
#    bit-identical (the logits now differ from main's in the last bits: the sum of squares by
#    groups of 4).
# 4. Bench windows: the 3B and 1B at 1 / 4096, then the 8B at 1 / 4096 in what is left.
# Every line is also in call.log ($OUT/call_v51.tgz).
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_h2304,llama1b_shape,smollm2_shape,llama3b_shape,llama8b_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
timeout 90 .gpu/bin/gpu_check --package="$W/tiny_h2304.tpkg" --contexts=1,2,17,100,383,384,385,600 --runs=10 \
  --tokens=500 > "$OUT/gpu_check_tiny_h2304.txt" 2>&1
echo "tiny_h2304: rc=$? $(grep -cE 'FAIL' "$OUT/gpu_check_tiny_h2304.txt") FAIL lines; $(tail -1 "$OUT/gpu_check_tiny_h2304.txt")"
for tool in memcheck synccheck; do CALL_SECONDS=$SECONDS SAN_DEADLINE=300 bash tests/gpu/sanitize_one.sh bin $tool tiny_h2304; done
CALL_MODELS=llama1b_shape,smollm2_shape call_logits a=.gpu/a v=.gpu/bin
echo "logits at ${SECONDS}s"
for m in llama3b_shape llama8b_shape; do
  tol=2e-3; [ $m = llama8b_shape ] && tol=5e-3
  timeout 90 .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1,32,1024 --cpu_contexts=1 --runs=3 --tokens=32 \
    --tolerance=$tol --sampling_checks=0 --cpu_generate_tokens=0 --check_target=false > "$OUT/gpu_check_$m.txt" 2>&1
  echo "$m v51 gpu_check rc=$? at ${SECONDS}s"; grep -E "PASS|FAIL|rel|bit" "$OUT/gpu_check_$m.txt" | head -6
done
timeout $((480 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama3b_shape,llama1b_shape --contexts=1,4096 --blocks=3 --out_dir="$OUT/bench_3b_1b" | tee "$OUT/summary_3b_1b.txt"
echo "bench 3B/1B rc=${PIPESTATUS[0]} at ${SECONDS}s"
timeout $((585 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama8b_shape --contexts=1,4096 --blocks=3 --out_dir="$OUT/bench_8b" | tee "$OUT/summary_8b.txt"
echo "bench 8B rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v51 .gpu/call_v51.sh
