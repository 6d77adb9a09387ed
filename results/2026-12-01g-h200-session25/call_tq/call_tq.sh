#!/usr/bin/env bash
# Call TQ (docs/PERFORMANCE.md "v49: three rows at once where a warp's QKV rows are odd"), ON the
# GPU machine from the repo root (~9 min):
#   bash .gpu/call_tq.sh
# Here first: bash tests/gpu/prepare_ab.sh main exp/qkv-triple (.gpu/a = main, .gpu/bin = v49);
# cp docs/experiments/next/call_tq.sh .gpu/; carry .gpu/ab.tar.xz and .gpu/call_tq.sh.
# Every line is also in call.log ($OUT/call_tq.tgz).
# 1. Tiny models planned on few workers, so that QKV tasks hold 38-48 rows (tiny_hd80_g6 on 16:
#    40 rows, 3 on warps 0-7 and 2 on the others, k = 480; tiny_hd128_g4 on 32: 48, 3 on every
#    warp; on 40: 38-39): v49 GPU = CPU at contexts 1-600, 10 x 500 tokens bit-identical;
#    memcheck and synccheck of two of them.
# 2. Logits at contexts 1, 32, 1024, v49 against main bit for bit (every row's sum keeps its
#    order): the 3B, 1B and SmolLM2 shapes.
# 3. Bench windows, 3 interleaved blocks, main against v49: the 3B at 1 / 1024 / 4096, the 1B
#    and SmolLM2 at 1 / 4096.
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_hd80_g6,tiny_hd128_g4,llama3b_shape,llama1b_shape,smollm2_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
for mw in tiny_hd80_g6:16 tiny_hd128_g4:32 tiny_hd128_g4:40; do
  m=${mw%:*}; w=${mw#*:}; p="${m}_w$w"
  python3 py/planner/main.py --checkpoint="$W/$m" --target="$W/target.json" --out="$W/$p.tpkg" --workers="$w" \
    --max_context=600 2>&1 | grep -E "^tasks|rror"
  f="$OUT/gpu_check_$p.txt"
  timeout 60 .gpu/bin/gpu_check --package="$W/$p.tpkg" --contexts=1,2,17,100,383,384,385,600 --runs=10 --tokens=500 \
    > "$f" 2>&1
  echo "$p: rc=$? $(grep -c FAIL "$f") FAIL lines; $(tail -1 "$f")"
done
for p in tiny_hd80_g6_w16 tiny_hd128_g4_w32; do
  for tool in memcheck synccheck; do CALL_SECONDS=$SECONDS SAN_DEADLINE=200 bash tests/gpu/sanitize_one.sh bin $tool $p; done
done
CALL_MODELS=llama3b_shape,llama1b_shape,smollm2_shape call_logits a=.gpu/a t=.gpu/bin
echo "logits at ${SECONDS}s"
timeout $((330 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=t=.gpu/bin \
  --models=llama3b_shape --contexts=1,1024,4096 --blocks=3 --out_dir="$OUT/bench_3b" | tee "$OUT/summary_3b.txt"
echo "bench 3B rc=${PIPESTATUS[0]} at ${SECONDS}s"
timeout $((570 - SECONDS)) python3 py/tools/bench_windows.py --config=a=.gpu/a --config=t=.gpu/bin \
  --models=llama1b_shape,smollm2_shape --contexts=1,4096 --blocks=3 --out_dir="$OUT/bench_small" |
  tee "$OUT/summary_small.txt"
echo "bench 1B/SmolLM2 rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_tq .gpu/call_tq.sh
