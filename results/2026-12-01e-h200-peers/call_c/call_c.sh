#!/usr/bin/env bash
# Call C (docs/PERFORMANCE.md "Call C", twenty-third session), ON the GPU machine from the
# repo root: the full showcase of main (all five runtimes, llama.cpp included), both shapes,
# without traces, as call B, on a second machine start. llama-bench: /tmp/llamacpp of call A when
# the machine is still warm, else the carried .gpu/llamacpp_bin.part_a?.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/bin.tar.xz
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
ls -la /tmp/llamacpp/build/bin/llama-bench 2>/dev/null || echo "llama-bench from the carried parts"
SHOWCASE_TRACE=0 timeout 300 bash tests/gpu/showcase.sh llama1b_shape 2>&1 | grep -v "^I1" | tail -24
echo "1B done at ${SECONDS}s rc=${PIPESTATUS[0]}"
cp "$OUT/floor.json" "$OUT/llama1b_shape/floor.json"
SHOWCASE_TRACE=0 timeout $((575 - SECONDS)) bash tests/gpu/showcase.sh smollm2_shape 2>&1 | grep -v "^I1" | tail -24
echo "SmolLM2 done at ${SECONDS}s rc=${PIPESTATUS[0]}"
cp "$OUT/floor.json" "$OUT/smollm2_shape/floor.json"
call_end call_c .gpu/call_c.sh
