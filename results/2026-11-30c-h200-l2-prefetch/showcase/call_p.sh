#!/usr/bin/env bash
# GPU call P: call O again, with attention_tile_min 128 (main after v28, 128) for the 1B shape on a fresh machine,
# TileInfer against torch.compile + CUDA graph only (the best peer of every earlier showcase)
# at contexts 1, 256, 1024, 2048, 4096, within the session's last ~450 s of device time.
# Carry .gpu/showbin.tar.xz (tar -C .gpu/bin -cJf .gpu/showbin.tar.xz bench probe floor) and
# this script as .gpu/call_p.sh.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT" .gpu/bin
tar -C .gpu/bin -xJf .gpu/showbin.tar.xz
export PYTHONPATH=py:.
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
SHOWCASE_TRACE=0 SHOWCASE_FLAGS="--runtimes=tileinfer,torch_compile --contexts=1,256,1024,2048,4096" \
  timeout 360 bash tests/gpu/showcase.sh llama1b_shape 2>&1 | grep -v "^I1" | tail -30
echo "llama1b_shape done at ${SECONDS}s rc=${PIPESTATUS[0]}"
cp "$OUT/floor.json" "$OUT/llama1b_shape/floor.json"
cp .gpu/call_p.sh "$OUT/"
cd "$OUT" && tar czf ../call_p.tgz . && rm -rf ./* && mv ../call_p.tgz .
