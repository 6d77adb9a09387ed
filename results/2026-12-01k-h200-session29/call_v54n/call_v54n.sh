#!/usr/bin/env bash
# Call V54N (docs/PERFORMANCE.md, "v54n"), ON the GPU machine from the repo root, a fresh start
# (~7 min): v54n (exp/narrow-cold-n: the narrow kernel's never-run fallbacks out of line, the wide
# kernel's inline) against main (v53b merged), on the 1B, SmolLM2 and the 3B.
#   bash .gpu/call_v54n.sh
# Here first: the archive .gpu/ab.tar.xz with a = main's device code (call V53's v53b build,
# e81827f, whose files main now has) and bin = v54n (tests/gpu/prepare.sh in its worktree), packed
# as prepare_ab.sh packs; cp docs/experiments/next/call_v54n.sh .gpu/; carry .gpu/ab.tar.xz and
# .gpu/call_v54n.sh. Every line is also in call.log ($OUT/call_v54n.tgz).
# 1. Correct: v54n GPU = CPU on tiny_h38 (the fallbacks out of line), tiny_9x3 and tiny_h2304 (the
#    wide kernel), by default and with tiles every step; memcheck and synccheck on tiny_h38; the
#    1B's, SmolLM2's and the 3B's logits bit-identical to main's.
# 2. Bench windows: n (main again, the null), a (main), x (v54n) on the 1B and SmolLM2 at 1 / 256 /
#    1024 / 4096 (4 blocks), and on the 3B at 1 / 1024 / 4096 (3 blocks).
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_h38,tiny_9x3,tiny_h2304,llama1b_shape,smollm2_shape,llama3b_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
call_tiny_tiles tiny_h38 tiny_9x3 tiny_h2304
for tool in memcheck synccheck; do
  CALL_SECONDS=$SECONDS SAN_DEADLINE=200 bash tests/gpu/sanitize_one.sh bin $tool tiny_h38 --attention_tile_min=1
done
CALL_MODELS=llama1b_shape,smollm2_shape,llama3b_shape call_logits a=.gpu/a x=.gpu/bin
echo "checks at ${SECONDS}s"
timeout $((360 - SECONDS)) python3 py/tools/bench_windows.py --config=n=.gpu/a --config=a=.gpu/a --config=x=.gpu/bin \
  --models=llama1b_shape,smollm2_shape --contexts=1,256,1024,4096 --blocks=4 --out_dir="$OUT/bench_small" |
  tee "$OUT/summary_small.txt"
echo "bench rc=${PIPESTATUS[0]} at ${SECONDS}s"
timeout $((570 - SECONDS)) python3 py/tools/bench_windows.py --config=n=.gpu/a --config=a=.gpu/a --config=x=.gpu/bin \
  --models=llama3b_shape --contexts=1,1024,4096 --blocks=3 --out_dir="$OUT/bench_3b" | tee "$OUT/summary_3b.txt"
echo "bench 3b rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v54n .gpu/call_v54n.sh
