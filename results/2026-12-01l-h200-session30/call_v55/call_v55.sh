#!/usr/bin/env bash
# Call V55 (docs/PERFORMANCE.md, v55), ON the GPU machine from the repo root: the wide kernel for
# head_dim 128 against main on the 3B shape (and the 8B with CALL_8B=1), with its checks.
# Here first: .gpu/ab.tar.xz packed with a = main's build and bin = v55's; cp this to .gpu/;
# carry both; run `bash .gpu/call_v55.sh 2>&1 | tail -60`.
set -u
source tests/gpu/call_lib.sh
models=tiny_hd128_g3,tiny_hd128_g4,tiny_h2304,tiny_hd80_g6,llama3b_shape
[ "${CALL_8B:-0}" = 1 ] && models=$models,llama8b_shape
CALL_MODELS=$models call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
call_tiny_tiles tiny_hd128_g3 tiny_hd128_g4 tiny_h2304 tiny_hd80_g6
for tool in memcheck synccheck; do CALL_SECONDS=$SECONDS SAN_DEADLINE=300 bash tests/gpu/sanitize_one.sh bin $tool tiny_hd128_g4; done
big=llama3b_shape; [ "${CALL_8B:-0}" = 1 ] && big=llama3b_shape,llama8b_shape
CALL_MODELS=$big call_logits a=.gpu/a v=.gpu/bin
echo "checks at ${SECONDS}s"
timeout $((570 - SECONDS)) python3 py/tools/bench_windows.py --config=n=.gpu/a --config=a=.gpu/a --config=v=.gpu/bin \
  --models=$big --contexts=1,1024,4096 --blocks=3 --reps=5 --out_dir="$OUT/bench" | tee "$OUT/summary.txt"
echo "bench rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v55 .gpu/call_v55.sh
