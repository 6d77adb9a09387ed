#!/usr/bin/env bash
# Call FIN (docs/PERFORMANCE.md "Call FIN"), ON the GPU machine from the repo root: main's final
# build after the review mends of the positions-in-order rule (host code only): the tiny models
# with the step-order check, golden, sanitizers, the shapes' generation, the bench's context order,
# and the non-finite stage (a request stopped by a non-finite logit, GPU and CPU).
# Here first: bash tests/gpu/prepare.sh; cp this to .gpu/; carry .gpu/bin.tar.xz and it.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/bin.tar.xz
call_checks
echo "step order: $(cat "$OUT"/tiny_bin/gpu_check_*.txt | grep -c 'step order (skips refused, same-token windows keep later rows): ok') ok, $(cat "$OUT"/tiny_bin/gpu_check_*.txt | grep -c 'step order: FAIL') FAIL"
grep -h "step order: FAIL" "$OUT"/tiny_bin/gpu_check_*.txt | head -5
call_generation llama1b_shape smollm2_shape
OUT=$OUT/nonfinite bash tests/gpu/device_checks.sh nonfinite 2>&1 | grep -E "exit|FAIL"
timeout $((560 - SECONDS)) python3 py/tools/bench_windows.py --config=A=.gpu/bin --contexts=4096,1,1024,256 --blocks=2 \
  --reps=5 --out_dir="$OUT/bench" 2>&1 | grep -v "^I" | tail -10
echo "bench at ${SECONDS}s"
call_end call_fin2 .gpu/call_fin2.sh
