#!/usr/bin/env bash
# Call P3B (docs/PERFORMANCE.md "P3b and P3c"), ON the GPU machine from the repo root:
# a = main f3d2f79 (V), b = P3b (exp/fused-attn-wo-p3b), bin = P3c (exp/fused-attn-wo-p3c);
# P3b and P3c give wrong output by design (timing only): bench windows and traces, no checks.
# Here first: bash tests/gpu/prepare_ab.sh f3d2f79 exp/fused-attn-wo-p3b exp/fused-attn-wo-p3c
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
timeout 240 python3 py/tools/bench_windows.py --config=V=.gpu/a --config=P3b=.gpu/b --config=P3c=.gpu/bin \
  --contexts=1,64,128,256,1024 --out_dir="$OUT/bench_p3b" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_trace .gpu/a V llama1b_shape 32
call_trace .gpu/b P3b llama1b_shape 32
call_trace .gpu/a V smollm2_shape 32
call_trace .gpu/b P3b smollm2_shape 32
echo "traces done at ${SECONDS}s"
call_end call_p3b .gpu/call_p3b.sh
