#!/usr/bin/env bash
# Call HK (docs/PERFORMANCE.md "Call HK"), ON the GPU machine from the repo root: the host's
# positions-in-order rule (KvHistory) on the GPU executor, with main's device code unchanged.
# Here first: bash tests/gpu/prepare.sh; cp docs/experiments/next/call_hk.sh .gpu/; carry
# .gpu/bin.tar.xz and .gpu/call_hk.sh; run `bash .gpu/call_hk.sh 2>&1 | tail -80`.
# 1. call_checks: tiny models GPU = CPU (10 x 500 tokens bit-identical; gpu_check's new step-order
#    check on each model whose max context leaves room), golden packages, memcheck and synccheck.
# 2. The bench (RunForcedWindow) at contexts 4096, 1, 1024, 256 in that order, 3 blocks: a window
#    after a longer context's re-runs positions with the tokens they hold, which the rule must
#    let through (it refuses only a position past the rows held).
# 3. The shapes' gpu_check with generation (Generate's launches record the tokens they fed).
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/bin.tar.xz
call_checks
echo "step order lines: $(cat "$OUT"/tiny_bin/gpu_check_*.txt | grep -c 'step order (skips refused, same-token windows keep later rows): ok') ok, $(cat "$OUT"/tiny_bin/gpu_check_*.txt | grep -c 'step order: FAIL') FAIL"
grep -h "step order: FAIL" "$OUT"/tiny_bin/gpu_check_*.txt | head -5
for m in llama1b_shape smollm2_shape; do
  timeout 120 .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1,100,1000 --cpu_contexts=1 --runs=3 --tokens=128 \
    --sampling_checks=0 --cpu_generate_tokens=0 > "$OUT/gpu_check_$m.txt" 2>&1
  echo "$m gpu_check rc=$?: $(grep -E 'step order|determinism|gpu_check: (PASS|FAIL)' "$OUT/gpu_check_$m.txt" | tr '\n' ' ')"
done
timeout 240 python3 py/tools/bench_windows.py --config=A=.gpu/bin --contexts=4096,1,1024,256 --blocks=3 --reps=5 \
  --out_dir="$OUT/bench" 2>&1 | grep -v "^I" | tail -14
echo "bench errors: $(grep -c '"error"' "$OUT"/bench/*.jsonl 2>/dev/null | tr '\n' ' ')"
call_end call_hk .gpu/call_hk.sh
