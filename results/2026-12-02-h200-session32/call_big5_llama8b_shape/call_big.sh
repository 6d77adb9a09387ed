#!/usr/bin/env bash
# Call BIG (docs/PERFORMANCE.md "Llama 3.2 3B and Llama 3.1 8B shapes"), ON the GPU machine from
# the repo root, one call a shape, main's build:
#   bash .gpu/call_big.sh llama3b_shape   (~5 min in call BIG: a 6.4 GB checkpoint written there)
#   bash .gpu/call_big.sh llama8b_shape   (16.1 GB; call BIG's run, before make_models drew the
#                                          checkpoints in parallel, took 8.7 min with no traces and
#                                          contexts 1 and 4096; the transformers comparison comes
#                                          last and is skipped when out of time)
# Here first: bash tests/gpu/prepare.sh; cp docs/experiments/next/call_big.sh .gpu/; carry
# .gpu/bin.tar.xz and .gpu/call_big.sh (or CALL_ARCHIVE=.gpu/ab.tar.xz from prepare_ab.sh, whose
# .gpu/bin is its last build); run `bash .gpu/call_big.sh MODEL 2>&1 | tail -60`.
# Every line is also in call.log ($OUT/call_big_MODEL.tgz).
# 1. head_dim 128 on two tiny models (Llama 3.2 3B's 3 and Llama 3.1 8B's 4 query heads a K/V
#    head): GPU = CPU at contexts 1-600, 10 x 500 tokens bit-identical, with ATTENTION plain and in
#    tiles; memcheck of one.
# 2. The shape with random BF16 weights: GPU = CPU executor at contexts 1 and 2 (the CPU reads every
#    weight per position), GPU logits at 1-4096, 3 x 64 tokens bit-identical (call BIG's 3B: 128).
# 3. The showcase (tests/gpu/showcase.sh): floor, traces at 32 and 4064, TileInfer against
#    torch.compile + CUDA graph at contexts 1, 1024, 4096.
# 4. transformers in FP32 against the GPU's logits and its greedy tokens (py/tools/hf_compare.py).
set -u
MODEL=${1:?usage: call_big.sh llama3b_shape|llama8b_shape}
case "$MODEL" in llama3b_shape|llama8b_shape) ;; *) echo "call_big: unknown model $MODEL" >&2; exit 2 ;; esac
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_hd128_g3,tiny_hd128_g4 call_begin "${CALL_ARCHIVE:-.gpu/bin.tar.xz}"
call_tiny_tiles tiny_hd128_g3 tiny_hd128_g4
CALL_SECONDS=$SECONDS SAN_DEADLINE=200 bash tests/gpu/sanitize_one.sh bin memcheck tiny_hd128_g4
python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models="$MODEL" 2>&1 | grep -v "^I"
echo "$MODEL made at ${SECONDS}s: $(du -sh "$W/$MODEL" "$W/$MODEL.tpkg" | awk '{print $2, $1}' | tr '\n' ' ')"
tol=$(bash tests/gpu/gpu_check_tolerance.sh "$MODEL")
timeout 150 .gpu/bin/gpu_check --package="$W/$MODEL.tpkg" --contexts=1,2,100,1000,4096 --cpu_contexts=1,2 --runs=3 \
  --tolerance=$tol \
  --tokens=64 --sampling_checks=0 --cpu_generate_tokens=0 --logits_out="$W/$MODEL.logits" \
  --tokens_out="$W/$MODEL.tokens" > "$OUT/gpu_check_$MODEL.txt" 2>&1
echo "$MODEL gpu_check rc=$? at ${SECONDS}s"
grep -E "PASS|FAIL|rel|worst|bit" "$OUT/gpu_check_$MODEL.txt" | head -12
hf() {
  timeout "$1" python3 py/tools/hf_compare.py --checkpoint="$W/$MODEL" --logits="$W/$MODEL.logits" \
    --tokens="$W/$MODEL.tokens" --json_out="$OUT/hf_compare_$MODEL.json" > "$OUT/hf_compare_$MODEL.txt" 2>&1
  echo "$MODEL hf_compare rc=$? at ${SECONDS}s"
  grep -vi warning "$OUT/hf_compare_$MODEL.txt" | tail -8
}
[ "$MODEL" = llama3b_shape ] && hf 150
# Call BIG ran the 8B without traces and at contexts 1 and 4096 only (its make took ~250 s of
# the call, drawn sequentially); SHOWCASE_TRACE=0 and CONTEXTS=1,4096 do that again.
SHOWCASE_FLAGS="--runtimes=tileinfer,torch_compile --contexts=${CONTEXTS:-1,1024,4096}" \
  timeout $((560 - SECONDS)) bash tests/gpu/showcase.sh "$MODEL" 2>&1 | tee "$OUT/showcase_$MODEL.log" | grep -E "^\| [0-9]|^\| tileinfer|^\| torch|^\| floor|token:|trace"
echo "$MODEL showcase rc=${PIPESTATUS[0]} at ${SECONDS}s (its whole output: showcase_$MODEL.log)"
cp "$OUT/floor.json" "$OUT/$MODEL/floor.json" 2>/dev/null
if [ "$MODEL" = llama8b_shape ]; then
  if [ $((585 - SECONDS)) -gt 40 ]; then hf $((585 - SECONDS)); else echo "hf_compare skipped: out of time at ${SECONDS}s"; fi
fi
call_end "call_big_$MODEL" .gpu/call_big.sh
