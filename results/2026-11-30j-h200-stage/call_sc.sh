#!/usr/bin/env bash
# Call SC (seventeenth session, docs/PERFORMANCE.md "Call SC"), ON the GPU machine from the repo
# root, a fresh start (the second for v41). Here first: call EF's .gpu/ab.tar.xz (a = main
# 79c0892, b = v40c, bin = v41 = exp/evict-first, the same cuda/ sources as main after v41
# landed); carry it and this script as .gpu/call_sc.sh. ~9 min.
# 1. Bench windows, contexts 1, 256, 1024, 4096, both shapes: A (main before v41) and E (v41).
# 2. The showcase of v41 (TileInfer, torch.compile + CUDA graph, the floor), 1B then SmolLM2.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
timeout 200 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=E=.gpu/bin --contexts=1,256,1024,4096 \
  --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
SHOWCASE_FLAGS="--runtimes=tileinfer,torch_compile" timeout 300 bash tests/gpu/showcase.sh llama1b_shape 2>&1 \
  | grep -E "^\| [0-9]|^\| tileinfer|^\| torch|^\| floor|token:" | head -14
cp "$OUT/floor.json" "$OUT/llama1b_shape/floor.json" 2>/dev/null
echo "llama1b_shape showcase at ${SECONDS}s"
SHOWCASE_TRACE=0 SHOWCASE_FLAGS="--runtimes=tileinfer,torch_compile" timeout $((530 - SECONDS)) \
  bash tests/gpu/showcase.sh smollm2_shape 2>&1 | grep -E "^\| [0-9]|^\| tileinfer|^\| torch|^\| floor" | head -12
cp "$OUT/floor.json" "$OUT/smollm2_shape/floor.json" 2>/dev/null
echo "smollm2_shape showcase at ${SECONDS}s"
call_end call_sc .gpu/call_sc.sh
