#!/usr/bin/env bash
# Call RD4 (docs/PERFORMANCE.md "Call RD3 measured", next), ON the GPU machine from the repo
# root, a fresh start. Here first: .gpu/ab.tar.xz with a = main f9d5d2d's build and bin =
# exp/fixed-red-proto P2 (its tests/gpu/prepare.sh build), and this script copied to
# .gpu/call_rd4.sh. ~3 minutes. The plans: this tree's planner defaults (128 workers).
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
timeout 200 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=P2=.gpu/bin \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_end call_rd4 .gpu/call_rd4.sh
