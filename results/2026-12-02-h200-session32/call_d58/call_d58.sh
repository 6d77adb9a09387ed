#!/usr/bin/env bash
# Call D58 (docs/PERFORMANCE.md, v58), ON the GPU machine from the repo root: direct attention
# with staged inputs against main, with its checks. Here first: .gpu/ab.tar.xz with a = main's
# worker build and bin = v58's; cp this to .gpu/; carry both.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
call_logits a=.gpu/a v0=.gpu/bin
OUT=$OUT/tiny_d64 GPU_CHECK_FLAGS=--direct_attention=64 bash tests/gpu/device_checks.sh probe tiny > "$OUT/tiny_d64.txt" 2>&1
echo "tiny with --direct_attention=64 rc=$?: $(grep -l '^gpu_check: PASS' "$OUT"/tiny_d64/gpu_check_tiny_*.txt | wc -l) of $(ls "$OUT"/tiny_d64/gpu_check_tiny_*.txt | wc -l) PASS"
grep -h -E "FAIL|direct attention|rror" "$OUT"/tiny_d64/gpu_check_tiny_*.txt | sort | uniq -c | sed -n 1,12p
for m in llama1b_shape smollm2_shape; do
  timeout 120 .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1,16,32,64,100 --cpu_contexts=1,64 --runs=3 --tokens=128 \
    --sampling_checks=0 --cpu_generate_tokens=0 --direct_attention=64 > "$OUT/gpu_check_${m}_d64.txt" 2>&1
  echo "$m d64 rc=$?: $(grep -E 'max rel|step order|determinism|gpu_check: (PASS|FAIL)' "$OUT/gpu_check_${m}_d64.txt" | tr '\n' ' ' | cut -c1-400)"
done
for tool in memcheck synccheck racecheck; do
  CALL_SECONDS=$SECONDS SAN_DEADLINE=240 bash tests/gpu/sanitize_one.sh bin $tool tiny_9x3 --direct_attention=64
done
echo "checks at ${SECONDS}s"
timeout $((580 - SECONDS)) python3 py/tools/bench_windows.py --config=n=.gpu/a --config=a=.gpu/a --config=v0=.gpu/bin \
  --config=d16=.gpu/bin:--direct_attention=16 --config=d64=.gpu/bin:--direct_attention=64 \
  --contexts=1,32,64,256,4096 --blocks=3 --reps=5 --out_dir="$OUT/bench" | tee "$OUT/summary.txt"
echo "bench rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_d58 .gpu/call_d58.sh
