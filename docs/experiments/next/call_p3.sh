#!/usr/bin/env bash
# Call P3 (docs/PERFORMANCE.md "P3: a timing prototype of ATTENTION fused with Wo"), ON the GPU
# machine from the repo root, a fresh start (or after call FR3 on its machine). Here first:
#   git worktree add -b exp/fused-attn-wo-proto /tmp/fused-proto 817fcbf &&
#     git -C /tmp/fused-proto apply "$PWD/docs/experiments/fused-attn-wo-proto.patch" &&
#     git -C /tmp/fused-proto commit -qam P3
#   bash tests/gpu/prepare_ab.sh 817fcbf exp/fused-attn-wo-proto    (a = v48, bin = P3)
# and this script copied to .gpu/call_p3.sh. ~3 minutes. P3's output is wrong by design
# (timing only): bench windows only, no checks.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
timeout 200 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=P3=.gpu/bin \
  --contexts=1,64,128,256,1024 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_end call_p3 .gpu/call_p3.sh
