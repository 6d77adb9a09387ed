#!/usr/bin/env bash
# Call Z2 (docs/PERFORMANCE.md "The ring with its bytes in flight capped"), run ON the GPU machine
# from the repo root. Here first: `bash tests/gpu/prepare.sh`; carry .gpu/bin.tar.xz and this
# script as .gpu/call_z2.sh. ~1.5 min.
# 1. floor --mode=loaded_barrier, now with the quiet-block-0 runs; 2. floor --mode=pipeline with
# the capped rings (runs 18-25).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/bin.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/gpu.csv"
timeout 120 .gpu/bin/floor --mode=loaded_barrier > "$OUT/loaded_barrier.json"; echo "loaded_barrier rc=$? at ${SECONDS}s"
timeout 300 .gpu/bin/floor --mode=pipeline > "$OUT/pipeline.json"; echo "pipeline rc=$? at ${SECONDS}s"
cat "$OUT/loaded_barrier.json" "$OUT/pipeline.json"
cd "$OUT" && tar czf ../call_z2.tgz . && rm -rf ./* && mv ../call_z2.tgz .
