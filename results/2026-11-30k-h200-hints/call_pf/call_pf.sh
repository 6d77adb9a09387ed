#!/usr/bin/env bash
# Call PF (docs/PERFORMANCE.md "v44"), ON the GPU machine from the repo root. Here first:
#   a = main's build (worker v41), bin = exp/first-prefetch (tests/gpu/prepare.sh in its
#   worktree), packed as one `xz -9` stream into .gpu/pf.tar.xz; carry it and this script.
# 1. Logits of A and of the branch off (F0), mask 1 (F1) and all (F7): bit-identical.
# 2. Bench windows, contexts 1, 256, 1024, 4096, both shapes: A, F0, F1 (mask 1, 128 KB),
#    F2 (mask 2, 64 KB), F4 (mask 4, 64 KB), F7 (mask 7, 64 KB).
# 3. Plain traces at 32: 1B A, F0, F1, F7; SmolLM2 F0, F1.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/pf.tar.xz
F1=--first_prefetch_mask=1,--first_prefetch_kb=128
F7=--first_prefetch_mask=7,--first_prefetch_kb=64
call_logits A=.gpu/a F0=.gpu/bin F1=.gpu/bin:$F1 F7=.gpu/bin:$F7
echo "logits done at ${SECONDS}s"
timeout 400 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=F0=.gpu/bin --config=F1=.gpu/bin:$F1 \
  --config=F2=.gpu/bin:--first_prefetch_mask=2,--first_prefetch_kb=64 \
  --config=F4=.gpu/bin:--first_prefetch_mask=4,--first_prefetch_kb=64 --config=F7=.gpu/bin:$F7 \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_trace .gpu/a A llama1b_shape 32
call_trace .gpu/bin F0 llama1b_shape 32
call_trace .gpu/bin F1 llama1b_shape 32 ${F1//,/ }
call_trace .gpu/bin F7 llama1b_shape 32 ${F7//,/ }
call_trace .gpu/bin F0 smollm2_shape 32
call_trace .gpu/bin F1 smollm2_shape 32 ${F1//,/ }
echo "traces done at ${SECONDS}s"
call_end call_pf .gpu/call_pf.sh
