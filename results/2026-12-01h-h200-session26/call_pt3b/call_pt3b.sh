#!/usr/bin/env bash
# Call PT3B (docs/PERFORMANCE.md, Next of the twenty-fifth session, item 3), ON the GPU machine from
# the repo root (~3 min): phase traces of the 3B and 8B shapes at context 32, main against v50
# (docs/experiments/norm-global-loads.patch), to see what the RMSNorm's scalar loop (hidden sizes
# above 2,048) costs in QKV's and the FFN's phase 0 before changing it again.
#   bash .gpu/call_pt3b.sh
# Here first: git branch exp/norm-vec2 from the patch if it is gone (git apply on main, commit), then
# PREPARE_BAZEL_FLAGS=--define=phase_trace=1 bash tests/gpu/prepare_ab.sh main exp/norm-vec2;
# cp docs/experiments/next/call_pt3b.sh .gpu/; carry .gpu/ab.tar.xz and .gpu/call_pt3b.sh.
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=llama3b_shape,llama8b_shape call_begin .gpu/ab.tar.xz
echo "made at ${SECONDS}s"
for m in llama3b_shape llama8b_shape; do
  call_trace .gpu/a a $m 32
  call_trace .gpu/bin n $m 32
done
echo "traces at ${SECONDS}s"
call_end call_pt3b .gpu/call_pt3b.sh
