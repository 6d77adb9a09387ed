#!/usr/bin/env bash
# Call V53B (docs/PERFORMANCE.md, "Call V53B and v54"), ON the GPU machine from the repo root, a
# fresh start (~6 min): v53 and v53b on their second machine start, and v54 (exp/narrow-cold: v53b
# with the fallbacks no measured model runs out of line, and RMSNORM_GEMV's triples in the wide
# kernel only) on its first, against main.
#   bash .gpu/call_v53b.sh
# Here first: the archive .gpu/ab.tar.xz with a = main, b = v53, c = v53b, bin = v54 (call V53's
# archive, whose bin became c, plus `prepare_ab.sh exp/narrow-nobatch exp/narrow-cold`'s bin, packed
# as prepare_ab.sh packs); cp docs/experiments/next/call_v53b.sh .gpu/; carry .gpu/ab.tar.xz and
# .gpu/call_v53b.sh. Every line is also in call.log ($OUT/call_v53b.tgz).
# 1. Correct: v54 (.gpu/bin) GPU = CPU by default and with tiles in every step, 10 x 500 tokens
#    bit-identical, on tiny_h38 (hidden 38: every element-by-element fallback, now out of line, in
#    the narrow kernel), tiny_9x3, tiny_hd12 and tiny_h2304 (the wide kernel); main's tiny_h38
#    too (the fallbacks inline); memcheck and synccheck of v54 on tiny_h38 and tiny_h2304; the
#    1B's and SmolLM2's logits of v53, v53b and v54 bit-identical to main's.
# 2. Bench windows, 4 blocks: n (main again, the null), a (main), v (v53), w (v53b), x (v54) on the
#    1B and SmolLM2 at 1 / 256 / 1024 / 4096.
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_h38,tiny_9x3,tiny_hd12,tiny_h2304,llama1b_shape,smollm2_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
call_tiny_tiles tiny_h38 tiny_9x3 tiny_hd12 tiny_h2304
timeout 60 .gpu/a/gpu_check --package="$W/tiny_h38.tpkg" --contexts=1,2,17,100,383,384,385,600 --runs=10 \
  --tokens=500 > "$OUT/gpu_check_tiny_h38_main.txt" 2>&1
echo "main tiny_h38: rc=$? $(tail -1 "$OUT/gpu_check_tiny_h38_main.txt")"
for m in tiny_h38 tiny_h2304; do
  for tool in memcheck synccheck; do
    CALL_SECONDS=$SECONDS SAN_DEADLINE=200 bash tests/gpu/sanitize_one.sh bin $tool $m --attention_tile_min=1
  done
done
CALL_MODELS=llama1b_shape,smollm2_shape call_logits a=.gpu/a v=.gpu/b w=.gpu/c x=.gpu/bin
echo "checks at ${SECONDS}s"
timeout $((575 - SECONDS)) python3 py/tools/bench_windows.py --config=n=.gpu/a --config=a=.gpu/a --config=v=.gpu/b \
  --config=w=.gpu/c --config=x=.gpu/bin --models=llama1b_shape,smollm2_shape --contexts=1,256,1024,4096 --blocks=4 \
  --out_dir="$OUT/bench_small" |
  tee "$OUT/summary_small.txt"
echo "bench rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v53b .gpu/call_v53b.sh
