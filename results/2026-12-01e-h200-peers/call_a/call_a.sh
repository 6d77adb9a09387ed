#!/usr/bin/env bash
# Call A (docs/PERFORMANCE.md "Calls A-B, twenty-third session"), ON the GPU machine from the
# repo root, a fresh start: llama-bench built in the background (tests/gpu/showcase.sh
# build_llamacpp) while main's GPU checks run; the built llama-bench comes back in parts.
# Here first: bash tests/gpu/prepare.sh && bash tests/gpu/prepare_llamacpp.sh
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=llama1b_shape call_begin .gpu/bin.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
mkdir -p /tmp/llamacpp_out
(LLAMACPP_JOBS=13 OUT=/tmp/llamacpp_out bash tests/gpu/showcase.sh build_llamacpp > /tmp/llamacpp_build.log 2>&1
 echo "build_llamacpp rc=$?" >> /tmp/llamacpp_build.log) &
bpid=$!
call_checks
echo "checks done at ${SECONDS}s"
wait $bpid
tail -8 /tmp/llamacpp_build.log
echo "build done at ${SECONDS}s"
call_end call_a .gpu/call_a.sh
mv /tmp/llamacpp_out/llamacpp_bin.part_* "$OUT/" && ls -la "$OUT"
