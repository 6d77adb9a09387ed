#!/usr/bin/env bash
# Call U4 (docs/PERFORMANCE.md "v45"), ON the GPU machine from the repo root. Here first:
#   a = main's build (worker v41, from .gpu/wl.tar.xz), b = exp/unroll4-rows8 (U4R8), bin =
#   exp/unroll4 (U4), each by tests/gpu/prepare.sh in its worktree; packed as one `xz -9`
#   stream into .gpu/u4.tar.xz (b without decode, floor, probe). ~9 minutes.
# 1. Logits of U4 and U4R8 against A (bit-identical expected); U4's checks (tiny models GPU =
#    CPU, 10 x 500 tokens, golden; memcheck, synccheck).
# 2. Bench windows A, U4, U4R8 at contexts 1, 256, 1024, 4096, both shapes.
# 3. Plain traces at 32 and 1024, both shapes.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/u4.tar.xz
call_logits A=.gpu/a U4=.gpu/bin U4R8=.gpu/b
call_checks
echo "checks done at ${SECONDS}s"
timeout 240 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=U4=.gpu/bin --config=U4R8=.gpu/b \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  call_trace .gpu/a A $m 32,1024
  call_trace .gpu/bin U4 $m 32,1024
  call_trace .gpu/b U4R8 $m 32,1024
done
echo "traces done at ${SECONDS}s"
call_end call_u4 .gpu/call_u4.sh
