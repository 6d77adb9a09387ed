#!/usr/bin/env bash
# Call P5 (docs/PERFORMANCE.md "P5"), ON the GPU machine from the repo root, a fresh start:
# a = main f3d2f79 (V), bin = P5 (exp/attn-out-groups; wrong output by design, timing only).
# Here first: bash tests/gpu/prepare_ab.sh f3d2f79 exp/attn-out-groups
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
timeout 200 python3 py/tools/bench_windows.py --config=V=.gpu/a --config=P5=.gpu/bin \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench_p5" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_trace .gpu/a V llama1b_shape 32,4064
call_trace .gpu/bin P5 llama1b_shape 32,4064
call_trace .gpu/a V smollm2_shape 4064
call_trace .gpu/bin P5 smollm2_shape 4064
echo "traces done at ${SECONDS}s"
call_end call_p5 .gpu/call_p5.sh
