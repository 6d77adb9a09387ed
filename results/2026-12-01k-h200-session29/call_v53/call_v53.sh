#!/usr/bin/env bash
# Call V53 (docs/PERFORMANCE.md, "v53"), ON the GPU machine from the repo root, a fresh start (~8 min):
# v53 (exp/narrow-hd64: the narrow worker kernel without head dims above 64 or groups above 4, which
# now run the wide one) and v53b (exp/narrow-nobatch: v53 without the narrow kernel's batches of
# positions; head dims not a multiple of 8 run the wide kernel too) against main.
#   bash .gpu/call_v53.sh
# Here first: bash tests/gpu/prepare_ab.sh main exp/narrow-hd64 exp/narrow-nobatch (.gpu/a = main,
# .gpu/b = v53, .gpu/bin = v53b); cp docs/experiments/next/call_v53.sh .gpu/; carry .gpu/ab.tar.xz and
# .gpu/call_v53.sh. Every line is also in call.log ($OUT/call_v53.tgz).
# 1. Correct (.gpu/bin, v53b, whose routing holds v53's): tiny_hd128_g3, tiny_hd80_g6 (head dims
#    above 64), tiny_g8 (group 8 at head_dim 16) and tiny_hd12 (head_dim 12), now the wide kernel,
#    and tiny_9x3 (the narrow kernel) GPU = CPU by default and with tiles in every step, 10 x 500
#    tokens bit-identical; memcheck and synccheck of tiny_hd80_g6, tiny_g8, tiny_hd12 and tiny_9x3
#    with tiles; the 1B's and SmolLM2's logits of v53 and v53b bit-identical to main's (the narrow
#    kernel's arithmetic is main's at the default tile threshold).
# 2. Bench windows, 4 blocks: n (main again, the null), a (main), v (v53), w (v53b) on the 1B and
#    SmolLM2 at 1 / 256 / 1024 / 4096.
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_hd128_g3,tiny_hd80_g6,tiny_g8,tiny_hd12,tiny_9x3,llama1b_shape,smollm2_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
call_tiny_tiles tiny_hd128_g3 tiny_hd80_g6 tiny_g8 tiny_hd12 tiny_9x3
for m in tiny_hd80_g6 tiny_g8 tiny_hd12 tiny_9x3; do
  for tool in memcheck synccheck; do
    CALL_SECONDS=$SECONDS SAN_DEADLINE=200 bash tests/gpu/sanitize_one.sh bin $tool $m --attention_tile_min=1
  done
done
CALL_MODELS=llama1b_shape,smollm2_shape call_logits a=.gpu/a v=.gpu/b w=.gpu/bin
echo "checks at ${SECONDS}s"
timeout $((575 - SECONDS)) python3 py/tools/bench_windows.py --config=n=.gpu/a --config=a=.gpu/a --config=v=.gpu/b \
  --config=w=.gpu/bin --models=llama1b_shape,smollm2_shape --contexts=1,256,1024,4096 --blocks=4 \
  --out_dir="$OUT/bench_small" |
  tee "$OUT/summary_small.txt"
echo "bench rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v53 .gpu/call_v53.sh
