#!/usr/bin/env bash
# Call P5B (docs/PERFORMANCE.md "P5b"), ON the GPU machine from the repo root, a fresh start:
# a = main f3d2f79 (V), b = P5, bin = P5b (exp/attn-out-groups-b); P5 and P5b give wrong
# output by design (timing only).
# Here first: bash tests/gpu/prepare_ab.sh f3d2f79 exp/attn-out-groups exp/attn-out-groups-b
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
timeout 200 python3 py/tools/bench_windows.py --config=V=.gpu/a --config=P5=.gpu/b --config=P5b=.gpu/bin \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench_p5b" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_trace .gpu/bin P5b llama1b_shape 32,4064
echo "traces done at ${SECONDS}s"
call_end call_p5b .gpu/call_p5b.sh
