#!/usr/bin/env bash
# Call TC (docs/PERFORMANCE.md "Next (written 2026-12-01, end of the nineteenth session)"),
# ON the GPU machine from the repo root, a fresh start. Here first:
#   git branch exp/tile-choice main && git worktree add /tmp/tile-choice exp/tile-choice &&
#     (cd /tmp/tile-choice && git apply docs/experiments/tile-choice.patch && git commit -qam tile-choice)
#   bash tests/gpu/prepare_ab.sh main exp/tile-choice        (a = main, bin = the tile choice)
# and this script copied to .gpu/call_tc.sh. ~6 minutes.
# 1. Logits of T against A with the default plans (min_chunk 32: the same choices, so
#    bit-identical); T's checks (tiny models, golden, memcheck, synccheck).
# 2. Bench windows A and T on the default plans and the 1B planned with min_chunk 96 and 128.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
call_logits A=.gpu/a T=.gpu/bin
call_checks
for mc in 96 128; do
  python3 py/planner/main.py --checkpoint="$W/llama1b_shape" --target="$W/target.json" \
    --out="$W/llama1b_shape_mc$mc.tpkg" --max_context=4096 --attention_min_chunk=$mc 2>&1 | grep "^plan:"
done
echo "checks and plans done at ${SECONDS}s"
timeout 330 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=T=.gpu/bin \
  --models=llama1b_shape,llama1b_shape_mc96,llama1b_shape_mc128,smollm2_shape \
  --contexts=1,256,512,1024,2048,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"

if [ $SECONDS -lt 420 ]; then
timeout $((575 - SECONDS)) compute-sanitizer --tool racecheck --error-exitcode 9 .gpu/bin/gpu_check \
  --package=$W/tiny_9x3.tpkg --check_target=false --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=2 \
  --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 > "$OUT/sanitize_racecheck.txt" 2>&1
echo "racecheck rc=$? at ${SECONDS}s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/sanitize_racecheck.txt" | tail -2)"
else echo "racecheck skipped: ${SECONDS}s"; fi
call_end call_tc .gpu/call_tc.sh
