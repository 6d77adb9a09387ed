#!/usr/bin/env bash
# Call KV (thirty-sixth session; docs/PERFORMANCE.md "Call KV"), ON the GPU machine from the repo
# root: the thirty-fifth session's K/V rows kept across requests, on the GPU for the first time.
# gpu_check's "K/V reuse:" line (tokens and last logits of a run that keeps the rows, against a
# run from position 0) on both shapes and under memcheck, racecheck and synccheck of tiny_9x3;
# decode's chat on the GPU (its timing lines say how many rows each turn kept); the usual checks.
# Here first: bash tests/gpu/prepare.sh; carry .gpu/bin.tar.xz and this script.
set -u
export CALL_MODELS=smollm2_shape,llama1b_shape
source tests/gpu/call_lib.sh
call_begin .gpu/bin.tar.xz
for m in smollm2_shape llama1b_shape; do
  timeout 200 .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1,100,1000 --cpu_contexts=1 --runs=3 --tokens=128 \
    --sampling_checks=0 --cpu_generate_tokens=0 > "$OUT/gpu_check_$m.txt" 2>&1
  echo "$m gpu_check rc=$?: $(grep -E 'K/V reuse|step order|determinism|gpu_check: (PASS|FAIL)' "$OUT/gpu_check_$m.txt" | tr '\n' ' ')"
done
echo "--- chat on the GPU, three turns (SmolLM2 shape: random weights, so the words are noise):"
printf 'hello there\nand again\none more time\n' | timeout 60 .gpu/bin/decode --package="$W/smollm2_shape.tpkg" --chat \
  --max_new_tokens=24 --ignore_eos --device=gpu 2>&1 | grep -E "prompt:|error" | tee "$OUT/chat_gpu.txt"
call_checks
grep -h "K/V reuse" "$OUT"/tiny_bin/gpu_check_tiny_*.txt | sort | uniq -c
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/gpu_check --package="$W/tiny_9x3.tpkg" \
    --check_target=false --contexts=1,130 --cpu_contexts=130 --runs=1 --tokens=20 --sampling_checks=0 \
    --stream_checks=false --cpu_generate_tokens=0 > "$OUT/sanitize_kv_$tool.txt" 2>&1
  echo "$tool rc=$?: $(grep -E 'K/V reuse|SUMMARY|gpu_check: ' "$OUT/sanitize_kv_$tool.txt" | tr '\n' ' ') at ${SECONDS}s"
done
call_end call_kv docs/experiments/next/call_kv.sh
