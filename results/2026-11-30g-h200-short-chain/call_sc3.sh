#!/usr/bin/env bash
# Call SC3 (docs/PERFORMANCE.md "Call SC3"), run ON the GPU machine from the repo root, a fresh
# machine start. Carries call SC2's .gpu/ab.tar.xz (its bin = exp/short-chain fc5636c, the
# worker main has since v33 landed) and this script as .gpu/call_sc3.sh. ~9.5 min.
# The showcase (TileInfer and torch.compile + CUDA graph; the 1B with its trace) of v33.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz && rm -rf .gpu/a .gpu/b .gpu/c
grep -E "registers|spill" .gpu/bin/worker_kernel_worker.ptxas.txt | tail -1
SHOWCASE_FLAGS="--runtimes=tileinfer,torch_compile" timeout 320 bash tests/gpu/showcase.sh llama1b_shape 2>&1 \
  | grep -E "^\| [0-9]|^\| tileinfer|^\| torch|token:" | head -14
cp "$OUT/floor.json" "$OUT/llama1b_shape/floor.json" 2>/dev/null
echo "llama1b_shape showcase at ${SECONDS}s"
SHOWCASE_TRACE=0 SHOWCASE_FLAGS="--runtimes=tileinfer,torch_compile" timeout $((585 - SECONDS)) \
  bash tests/gpu/showcase.sh smollm2_shape 2>&1 | grep -E "^\| [0-9]|^\| tileinfer|^\| torch" | head -12
cp "$OUT/floor.json" "$OUT/smollm2_shape/floor.json" 2>/dev/null
echo "smollm2_shape showcase at ${SECONDS}s"
cp .gpu/call_sc3.sh "$OUT/"
cd "$OUT" && tar czf ../call_sc3.tgz . && rm -rf ./* && mv ../call_sc3.tgz .
