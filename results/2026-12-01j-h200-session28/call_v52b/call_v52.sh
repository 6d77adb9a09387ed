#!/usr/bin/env bash
# Call V52 (docs/PERFORMANCE.md, "v52"), ON the GPU machine from the repo root, a fresh start (~7 min):
# v52 (exp/attn-onepass-wide: head_dim 128's ATTENTION tiles in one pass, in the wide kernel only, and
# tiles from 65 positions there by default) against main.
#   bash .gpu/call_v52.sh
# Here first: bash tests/gpu/prepare_ab.sh main exp/attn-onepass-wide; cp docs/experiments/next/call_v52.sh
# .gpu/; carry .gpu/ab.tar.xz and .gpu/call_v52.sh. Every line is also in call.log ($OUT/call_v52.tgz).
# 1. Correct: tiny_h2304 (the wide kernel, head_dim 128) GPU = CPU by default and with tiles in every
#    step, 10 x 500 tokens bit-identical; tiny_hd128_g3 (the narrow kernel, head_dim 128) the same;
#    memcheck and synccheck of tiny_h2304 with tiles; the 1B's and SmolLM2's logits bit-identical to
#    main; the 3B's logits with tiles in every step bit-identical to main's two-pass tiles (the
#    emulator's result); the 3B GPU = CPU at contexts 1 and 2 with tiles.
# 2. Bench windows: n (main again, the null), a (main), v (v52) on the 1B and SmolLM2 at 1 / 1024 /
#    4096; a and v on the 3B at 256 / 1024 / 4096.
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_h2304,tiny_hd128_g3,llama1b_shape,smollm2_shape,llama3b_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
call_tiny_tiles tiny_h2304 tiny_hd128_g3
for tool in memcheck synccheck; do
  CALL_SECONDS=$SECONDS SAN_DEADLINE=200 bash tests/gpu/sanitize_one.sh bin $tool tiny_h2304 --attention_tile_min=1
done
CALL_MODELS=llama1b_shape,smollm2_shape call_logits a=.gpu/a v=.gpu/bin
CALL_MODELS=llama3b_shape call_logits a=.gpu/a:--attention_tile_min=1 v=.gpu/bin:--attention_tile_min=1
timeout 60 .gpu/bin/gpu_check --package="$W/llama3b_shape.tpkg" --contexts=1,2 --cpu_contexts=1,2 --runs=0 \
  --attention_tile_min=1 --sampling_checks=0 --check_target=false 2>&1 | grep -E "rel|PASS|FAIL"
echo "checks at ${SECONDS}s"
timeout $((330 - SECONDS)) python3 py/tools/bench_windows.py --config=n=.gpu/a --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama1b_shape,smollm2_shape --contexts=1,1024,4096 --blocks=3 --out_dir="$OUT/bench_small" |
  tee "$OUT/summary_small.txt"
echo "bench 1B/SmolLM2 rc=${PIPESTATUS[0]} at ${SECONDS}s"
timeout $((575 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=v=.gpu/bin \
  --models=llama3b_shape --contexts=256,1024,4096 --blocks=3 --out_dir="$OUT/bench_3b" | tee "$OUT/summary_3b.txt"
echo "bench 3B rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v52 .gpu/call_v52.sh
