#!/usr/bin/env bash
# showcase after v19 (main = exp/attention-batch-long merged; build = ab12's L): 1B then SmolLM2.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
SHOWCASE_TRACE=0 timeout 300 bash tests/gpu/showcase.sh llama1b_shape 2>&1 | grep -v "^I1" | tail -30
echo "1B done at ${SECONDS}s rc=${PIPESTATUS[0]}"
cp $OUT/floor.json $OUT/llama1b_shape/floor.json
SHOWCASE_TRACE=0 timeout $((585 - SECONDS)) bash tests/gpu/showcase.sh smollm2_shape 2>&1 | grep -v "^I1" | tail -30
echo "SmolLM2 done at ${SECONDS}s rc=${PIPESTATUS[0]}"
cp $OUT/floor.json $OUT/smollm2_shape/floor.json
cp .gpu/call13.sh $OUT/
