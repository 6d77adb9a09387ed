#!/usr/bin/env bash
# Call S (fifteenth session), ON the GPU machine from the repo root, a fourth machine start:
# the showcase of main 6c86f08 (v35 + v36u; call R's b build, repacked here as .gpu/bin.tar.xz)
# against torch.compile + CUDA graph: the 1B with its traces, then SmolLM2 without traces as far
# as the session's device time allows. Carry .gpu/bin.tar.xz and this script as .gpu/call_s.sh.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/bin.tar.xz
grep -E "registers|spill" .gpu/bin/worker_kernel_worker.ptxas.txt | tail -1
SHOWCASE_FLAGS="--runtimes=tileinfer,torch_compile" timeout 320 bash tests/gpu/showcase.sh llama1b_shape 2>&1 \
  | grep -E "^\| [0-9]|^\| tileinfer|^\| torch|token:" | head -14
cp "$OUT/floor.json" "$OUT/llama1b_shape/floor.json" 2>/dev/null
echo "llama1b_shape showcase at ${SECONDS}s"
SHOWCASE_TRACE=0 SHOWCASE_FLAGS="--runtimes=tileinfer,torch_compile" timeout $((455 - SECONDS)) \
  bash tests/gpu/showcase.sh smollm2_shape 2>&1 | grep -E "^\| [0-9]|^\| tileinfer|^\| torch" | head -12
cp "$OUT/floor.json" "$OUT/smollm2_shape/floor.json" 2>/dev/null
echo "smollm2_shape showcase at ${SECONDS}s"
cp .gpu/call_s.sh "$OUT/"
cd "$OUT" && tar czf ../call_s.tgz . && rm -rf ./* && mv ../call_s.tgz .
