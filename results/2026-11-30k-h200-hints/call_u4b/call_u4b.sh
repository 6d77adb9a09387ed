#!/usr/bin/env bash
# Call U4B (docs/PERFORMANCE.md "v45"): v45's U4R8 on a second, separately started machine,
# ON the GPU machine from the repo root. Here first: a = main's build (worker v41), bin =
# exp/unroll4-rows8, c = exp/unroll2-rows8 (U2R8; bench and gpu_check only), each by
# tests/gpu/prepare.sh in its worktree, one `xz -9` stream in .gpu/r8.tar.xz.
# 1. Logits of U4R8 and U2R8 against A (bit-identical); U4R8's checks (tiny models GPU = CPU, 10 x 500
#    tokens, seeded sampling, golden; memcheck, synccheck).
# 2. Bench windows A, U4R8, U2R8 at contexts 1, 256, 1024, 4096, both shapes.
# 3. racecheck of U4R8 on tiny_9x3 (contexts 1 and 130, two tokens), cut to leave time to pack.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/r8.tar.xz
call_logits A=.gpu/a U4R8=.gpu/bin U2R8=.gpu/c
call_checks
echo "checks done at ${SECONDS}s"
timeout 220 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=U4R8=.gpu/bin --config=U2R8=.gpu/c \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
timeout $((575 - SECONDS)) compute-sanitizer --tool racecheck --error-exitcode 9 .gpu/bin/gpu_check \
  --package=$W/tiny_9x3.tpkg --check_target=false --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=2 \
  --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 > "$OUT/sanitize_racecheck.txt" 2>&1
echo "racecheck rc=$? at ${SECONDS}s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/sanitize_racecheck.txt" | tail -2)"
call_end call_u4b .gpu/call_u4b.sh
