#!/usr/bin/env bash
# The next session's first GPU call (docs/PERFORMANCE.md "v42", "v43"), ON the GPU machine from
# the repo root, a fresh start. Here first (a clone of main has no exp/ branches; make them from
# the patches: v42's are one-line changes of LoadWeight8's load in cuda/common.cuh):
#   for n in w-l1na w-p256 w-both one-gemv; do git branch exp/$n main && git worktree add /tmp/$n exp/$n &&
#     (cd /tmp/$n && git apply docs/experiments/$n.patch && git commit -qam "$n"); done
#   bash tests/gpu/prepare_ab.sh main exp/w-l1na exp/w-p256 exp/w-both exp/one-gemv   (~18 min here)
# (a = main, b = l1na, c = p256, d = both, bin = v43); carry .gpu/ab.tar.xz and this script as
# .gpu/call_wl.sh. ~8.5 min. On the machine that wrote this, .gpu/ab.tar.xz already holds these
# five builds (main 1f31d4c, whose cuda/ is unchanged since fc5413a; .gpu/ab.revs.txt there):
# reuse it only if cuda/ has not changed since.
# 1. Numerics unchanged: the shape models' logits at contexts 1, 32, 1024 of A and each variant,
#    compared with cmp; bin (v43, the larger change): tiny models GPU = CPU with 10 x 500 tokens
#    bit-identical, golden; memcheck and synccheck on tiny_9x3 (racecheck in a second call if it
#    lands).
# 2. Bench windows, contexts 1, 256, 1024, 4096, both shapes: A, NA (L1::no_allocate), P
#    (L2::256B prefetch), NP (both), G (v43: one GEMV body for QKV, ATTN_OUT and LM_HEAD).
# 3. One plain trace of each at contexts 32 and 1024, both shapes.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/wl.tar.xz
call_logits A=.gpu/a NA=.gpu/b P=.gpu/c NP=.gpu/d G=.gpu/bin
call_checks
echo "checks done at ${SECONDS}s"
timeout 340 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=NA=.gpu/b --config=P=.gpu/c \
  --config=NP=.gpu/d --config=G=.gpu/bin --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  call_trace .gpu/a A $m 32,1024
  call_trace .gpu/b NA $m 32,1024
  call_trace .gpu/c P $m 32,1024
  call_trace .gpu/d NP $m 32,1024
  call_trace .gpu/bin G $m 32,1024
done
call_end call_wl .gpu/call_wl.sh
