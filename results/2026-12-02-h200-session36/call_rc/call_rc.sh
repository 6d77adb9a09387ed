#!/usr/bin/env bash
# Call RC (thirty-sixth session; docs/PERFORMANCE.md "v61"), ON the GPU machine from the repo root:
# the timing prototype of branch exp/attn-recompute (.gpu/bin: ATTN_OUT computes every head's
# attention at positions below 32, the ATTENTION waves skipped there) against main's build
# (.gpu/a). Its logits against the CPU executor at contexts 1-33 (close, not bit-identical: the
# sums' order differs), memcheck and racecheck of a few SmolLM2-shape steps, then bench windows
# ending at 16, 32 (the prototype's range) and 4096 (the null: the prototype's code present, not
# running), with a second copy of main (n) as the noise reference.
# Here first: main's build packed as .gpu/a.tar.xz, the branch's by tests/gpu/prepare.sh
# (.gpu/bin.tar.xz); carry both and this script.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/a.tar.xz .gpu/bin.tar.xz
for m in smollm2_shape llama1b_shape; do
  timeout 120 .gpu/bin/gpu_check --package="$W/$m.tpkg" --check_target=false --contexts=1,2,17,31,32,33 \
    --runs=0 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 > "$OUT/logits_$m.txt" 2>&1
  echo "$m rc=$?: $(grep -E 'context|recompute' "$OUT/logits_$m.txt" | tr '\n' ' ')"
done
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/gpu_check --package="$W/smollm2_shape.tpkg" \
    --check_target=false --contexts=1,5 --cpu_contexts=1 --runs=0 --sampling_checks=0 --stream_checks=false \
    --cpu_generate_tokens=0 > "$OUT/sanitize_$tool.txt" 2>&1
  echo "$tool rc=$?: $(grep -E 'SUMMARY|gpu_check: ' "$OUT/sanitize_$tool.txt" | tr '\n' ' ') at ${SECONDS}s"
done
timeout $((570 - SECONDS)) python3 py/tools/bench_windows.py --config=n=.gpu/a --config=a=.gpu/a --config=r=.gpu/bin \
  --contexts=16,32,4096 --blocks=3 --reps=5 --out_dir="$OUT/bench" 2>&1 | grep -v "^exp/attn" | tee "$OUT/summary.txt"
echo "bench rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_rc docs/experiments/next/call_rc.sh
