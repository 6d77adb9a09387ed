#!/usr/bin/env bash
# Call R12B (docs/PERFORMANCE.md "Call R12B"): the down projection's kRows 12 on a second,
# separately started machine, ON the GPU machine from the repo root. Here first: call DS's
# archive .gpu/ab.tar.xz (a = main v45, b = U3, c = U6, bin = exp/depth-r12), and this script
# copied to .gpu/call_r12b.sh. ~6 minutes.
# 1. Logits of R12 against A (bit-identical); R12's checks (tiny models GPU = CPU, 10 x 500
#    tokens, seeded sampling, golden; memcheck, synccheck).
# 2. Bench windows A, R12 at contexts 1, 256, 1024, 4096, both shapes.
# 3. Traces at 32, both shapes; racecheck of R12 on tiny_9x3, cut to leave time to pack.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
call_logits A=.gpu/a R12=.gpu/bin
call_checks
echo "checks done at ${SECONDS}s"
timeout 200 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=R12=.gpu/bin \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  call_trace .gpu/a A $m 32
  call_trace .gpu/bin R12 $m 32
done
timeout $((575 - SECONDS)) compute-sanitizer --tool racecheck --error-exitcode 9 .gpu/bin/gpu_check \
  --package=$W/tiny_9x3.tpkg --check_target=false --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=2 \
  --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 > "$OUT/sanitize_racecheck.txt" 2>&1
echo "racecheck rc=$? at ${SECONDS}s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/sanitize_racecheck.txt" | tail -2)"
call_end call_r12b .gpu/call_r12b.sh
