#!/usr/bin/env bash
# Call TC1 (docs/PERFORMANCE.md "Call TC1"): a short first look at the tile choice, ON the GPU
# machine from the repo root, a fresh start, with what this session's device time had left
# (~4 minutes). Here first: a = call DS's bin (main v46's code, from .gpu/ds.tar.xz), bin =
# exp/tile-choice (tests/gpu/prepare.sh in its worktree), packed as .gpu/tc.tar.xz; this script
# copied to .gpu/call_tc1.sh. Bench windows only (no checks: the full call TC, with checks and
# a second start, is the next session's).
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=llama1b_shape call_begin .gpu/tc.tar.xz
python3 py/planner/main.py --checkpoint="$W/llama1b_shape" --target="$W/target.json" \
  --out="$W/llama1b_shape_mc128.tpkg" --max_context=4096 --attention_min_chunk=128 2>&1 | grep "^plan:"
echo "planned at ${SECONDS}s"
timeout $((230 - SECONDS)) python3 py/tools/bench_windows.py --config=A=.gpu/a --config=T=.gpu/bin \
  --models=llama1b_shape,llama1b_shape_mc128 --contexts=1,512,1024 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_end call_tc1 .gpu/call_tc1.sh
