#!/usr/bin/env bash
# GPU call I: the showcase, right after call H on the same warm machine (its .gpu/a, b, c, bin
# are still unpacked there). SHOW=a, b, c or bin: the build shown (default bin).
# Carry .gpu/llamacpp_bin.part_a?, .gpu/wheels and this script as .gpu/call_i.sh. ~9 min.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
[ -x .gpu/bin/gpu_check ] && [ -x .gpu/a/gpu_check ] || { echo "call_i: no .gpu/a or .gpu/bin here (a fresh machine?): run call H first" >&2; exit 3; }
if [ "${SHOW:-bin}" != bin ]; then rm -rf .gpu/bin && cp -r ".gpu/$SHOW" .gpu/bin; fi
echo "showcase of .gpu/${SHOW:-bin}"
SHOWCASE_TRACE=0 timeout 300 bash tests/gpu/showcase.sh llama1b_shape 2>&1 | grep -v "^I1" | tail -30
echo "1B done at ${SECONDS}s rc=${PIPESTATUS[0]}"
cp $OUT/floor.json $OUT/llama1b_shape/floor.json
SHOWCASE_TRACE=0 timeout $((585 - SECONDS)) bash tests/gpu/showcase.sh smollm2_shape 2>&1 | grep -v "^I1" | tail -30
echo "SmolLM2 done at ${SECONDS}s rc=${PIPESTATUS[0]}"
cp $OUT/floor.json $OUT/smollm2_shape/floor.json
cp .gpu/call_i.sh $OUT/
cd "$OUT" && tar czf ../call_i.tgz . && rm -rf ./* && mv ../call_i.tgz .
