#!/usr/bin/env bash
# Call ON (docs/PERFORMANCE.md "Call ON: head_dim 128's tiles in one pass"), ON the GPU machine
# from the repo root (~8 min):
#   bash .gpu/call_on.sh
# Here first: bash tests/gpu/prepare_ab.sh main exp/attn-onepass-r (.gpu/a = main, .gpu/bin = the
# one-pass tiles); cp docs/experiments/next/call_on.sh .gpu/; carry .gpu/ab.tar.xz and
# .gpu/call_on.sh. Every line is also in call.log ($OUT/call_on.tgz).
# 1. The one-pass build with tiles in every step (--attention_tile_min=1): the tiny head_dim 80 and
#    128 models GPU = CPU at contexts 1-600 (10 x 500 tokens bit-identical); memcheck and synccheck.
# 2. The 3B shape's logits at contexts 1, 32, 1024 with tiles: the one-pass build against main's
#    two passes, bit for bit (the emulator found them bit-identical); the 1B and SmolLM2 shapes'
#    logits of both builds by their default, bit for bit.
# 3. Bench windows, 3 interleaved blocks: the 3B at 256 / 1024 / 4096 (main by default, i.e.
#    position by position; main with tiles; one pass with tiles), then the 1B and SmolLM2 at 1 /
#    1024 / 4096 (main against the one-pass build, both by default).
set -u
T=--attention_tile_min=1
T65=--attention_tile_min=65
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_hd80_g6,tiny_hd128_g3,tiny_hd128_g4,llama3b_shape,llama1b_shape,smollm2_shape \
  call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
for m in tiny_hd80_g6 tiny_hd128_g3 tiny_hd128_g4; do
  f="$OUT/gpu_check_${m}_tiles.txt"
  timeout 60 .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1,2,17,100,383,384,385,600 --runs=10 --tokens=500 \
    $T > "$f" 2>&1
  echo "$m tiles: rc=$? $(grep -c FAIL "$f") FAIL lines; $(tail -1 "$f")"
done
for tool in memcheck synccheck; do
  CALL_SECONDS=$SECONDS SAN_DEADLINE=200 bash tests/gpu/sanitize_one.sh bin $tool tiny_hd128_g4 $T
done
CALL_MODELS=llama3b_shape call_logits a65=.gpu/a:$T65 p65=.gpu/bin:$T65
call_logits a=.gpu/a p=.gpu/bin
echo "logits at ${SECONDS}s"
timeout $((400 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=a65=.gpu/a:$T65 \
  --config=p65=.gpu/bin:$T65 --models=llama3b_shape --contexts=256,1024,4096 --blocks=3 \
  --out_dir="$OUT/bench_3b" | tee "$OUT/summary_3b.txt"
echo "bench 3B rc=${PIPESTATUS[0]} at ${SECONDS}s"
timeout $((570 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=p=.gpu/bin \
  --models=llama1b_shape,smollm2_shape --contexts=1,1024,4096 --blocks=3 \
  --out_dir="$OUT/bench_small" | tee "$OUT/summary_small.txt"
echo "bench 1B/SmolLM2 rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_on .gpu/call_on.sh
