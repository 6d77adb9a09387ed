#!/usr/bin/env bash
# The full showcase of main, right after call_q.sh on the same warm machine (its .gpu/bin is still
# unpacked there). Carry .gpu/llamacpp_bin.part_a?, .gpu/wheels and this script as .gpu/call_r.sh.
# ~8 min: both models, every runtime (llama.cpp included), contexts 1-4096.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
[ -x .gpu/bin/bench ] || { echo "call_r: no .gpu/bin here (a fresh machine?): run call_q.sh first" >&2; exit 3; }
SHOWCASE_TRACE=0 timeout 300 bash tests/gpu/showcase.sh llama1b_shape 2>&1 | grep -v "^I1" | tail -30
echo "1B done at ${SECONDS}s rc=${PIPESTATUS[0]}"
cp "$OUT/floor.json" "$OUT/llama1b_shape/floor.json"
SHOWCASE_TRACE=0 timeout $((585 - SECONDS)) bash tests/gpu/showcase.sh smollm2_shape 2>&1 | grep -v "^I1" | tail -30
echo "SmolLM2 done at ${SECONDS}s rc=${PIPESTATUS[0]}"
cp "$OUT/floor.json" "$OUT/smollm2_shape/floor.json"
cp .gpu/call_r.sh "$OUT/"
cd "$OUT" && tar czf ../call_r.tgz . && rm -rf ./* && mv ../call_r.tgz .
