#!/usr/bin/env bash
# The twenty-first session's first call, ON the GPU machine from the repo root, a fresh start:
#  - call FR3 (docs/PERFORMANCE.md "Call FR2 measured"): v48 against the last format-1 main
#    (48745c5) on a second, separately started machine; prediction: as calls FR1 / FR2 within
#    1 point (1B -2 to -3.5%, SmolLM2 -8.5 to -12.5% at contexts 1 and 1024);
#  - call P3 (docs/PERFORMANCE.md "P3: a timing prototype of ATTENTION fused with Wo"): P3
#    against v48; its output is wrong by design (timing only): bench windows, no checks.
# Here first (a clone with history; ~12 minutes of builds on 2 cores):
#   git worktree add -b exp/fused-attn-wo-proto /tmp/fused-proto 817fcbf &&
#     git -C /tmp/fused-proto apply "$PWD/docs/experiments/fused-attn-wo-proto.patch" &&
#     git -C /tmp/fused-proto commit -qam P3
#   bash tests/gpu/prepare_ab.sh 48745c5 817fcbf exp/fused-attn-wo-proto
#       (a = format 1, b = v48 = main's worker, bin = P3)
#   git archive --prefix=main_py/ 48745c5 py/planner > .gpu/main_py.tar     (A's planner)
# and this script copied to .gpu/call_fr3_p3.sh. ~6 minutes.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
call_other_planner .gpu/main_py.tar f1  # format-1 packages of the same checkpoints for A
timeout 100 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=V=.gpu/b --config_packages=A="$W/f1" \
  --contexts=1,1024 --out_dir="$OUT/bench_fr3" 2>&1 | grep -v "^I1"
echo "FR3 done at ${SECONDS}s"
timeout 200 python3 py/tools/bench_windows.py --config=V=.gpu/b --config=P3=.gpu/bin \
  --contexts=1,64,128,256,1024 --out_dir="$OUT/bench_p3" 2>&1 | grep -v "^I1"
echo "P3 done at ${SECONDS}s"
cp .gpu/gguf_part_a /tmp/gguf_part_a && echo "stashed $(stat -c %s /tmp/gguf_part_a) bytes of the SmolLM2 GGUF for the next call"
call_end call_fr3_p3 .gpu/call_fr3_p3.sh
