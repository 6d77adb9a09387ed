#!/usr/bin/env bash
# Call DS (docs/PERFORMANCE.md "v46"), ON the GPU machine from the repo root, a fresh start.
# Here first (each patch is one constant on main's v45):
#   for n in u3 u6 r12; do git branch exp/depth-$n main && git worktree add /tmp/depth-$n exp/depth-$n &&
#     (cd /tmp/depth-$n && git apply docs/experiments/depth-$n.patch && git commit -qam "depth-$n"); done
#   bash tests/gpu/prepare_ab.sh main exp/depth-u3 exp/depth-u6 exp/depth-r12   (~15 min here)
# (a = main, b = U3, c = U6, bin = R12); carry .gpu/ab.tar.xz (~8 MB) and this script as
# .gpu/call_ds.sh. ~6 minutes.
# 1. Logits of each against A (bit-identical: the sums keep their order).
# 2. Bench windows A, U3, U6, R12 at contexts 1, 256, 1024, 4096, both shapes.
# 3. Plain traces at 32, both shapes.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
call_logits A=.gpu/a U3=.gpu/b U6=.gpu/c R12=.gpu/bin
echo "logits done at ${SECONDS}s"
timeout 300 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=U3=.gpu/b --config=U6=.gpu/c \
  --config=R12=.gpu/bin --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  call_trace .gpu/a A $m 32
  call_trace .gpu/b U3 $m 32
  call_trace .gpu/c U6 $m 32
  call_trace .gpu/bin R12 $m 32
done
call_end call_ds .gpu/call_ds.sh
