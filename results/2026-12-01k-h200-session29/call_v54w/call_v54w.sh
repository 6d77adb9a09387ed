#!/usr/bin/env bash
# Call V54W (docs/PERFORMANCE.md, v54), on call V53B's warm machine: v54 on the 3B (the wide kernel),
# and main's tiny_h38 GPU = CPU (the fallbacks inline). Archive as call V53B's.
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_h38,llama3b_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
timeout 60 .gpu/a/gpu_check --package="$W/tiny_h38.tpkg" --contexts=1,2,17,100,383,384,385,600 --runs=10 \
  --tokens=500 --check_target=false > "$OUT/gpu_check_tiny_h38_main.txt" 2>&1
echo "main tiny_h38: rc=$? $(tail -1 "$OUT/gpu_check_tiny_h38_main.txt")"
CALL_MODELS=llama3b_shape call_logits a=.gpu/a x=.gpu/bin
echo "checks at ${SECONDS}s"
timeout $((560 - SECONDS)) python3 py/tools/bench_windows.py --config=n=.gpu/a --config=a=.gpu/a --config=x=.gpu/bin \
  --models=llama3b_shape --contexts=1,1024,4096 --blocks=3 --out_dir="$OUT/bench_3b" | tee "$OUT/summary_3b.txt"
echo "bench rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v54w .gpu/call_v54w.sh
