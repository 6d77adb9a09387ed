#!/usr/bin/env bash
# Call FB (docs/PERFORMANCE.md, v57), ON the GPU machine from the repo root: the grid barrier on
# a flag word per block, in floor --mode=barrier and in the worker against main, with its checks.
# Here first: .gpu/ab.tar.xz with a = main's build and bin = v57's; cp this to .gpu/; carry both.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
timeout 60 .gpu/bin/floor --mode=barrier --reps=20 > "$OUT/barrier.json"; echo "barrier rc=$? at ${SECONDS}s"
cat "$OUT/barrier.json"
call_logits a=.gpu/a v=.gpu/bin
call_checks
CALL_SECONDS=$SECONDS SAN_DEADLINE=200 bash tests/gpu/sanitize_one.sh bin racecheck tiny_9x3
for m in llama1b_shape smollm2_shape; do
  call_trace .gpu/a a "$m" 32
  call_trace .gpu/bin v "$m" 32
done
echo "checks at ${SECONDS}s"
timeout $((575 - SECONDS)) python3 py/tools/bench_windows.py --config=n=.gpu/a --config=a=.gpu/a --config=v=.gpu/bin \
  --contexts=1,256,1024,4096 --blocks=3 --reps=5 --out_dir="$OUT/bench" | tee "$OUT/summary.txt"
echo "bench rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_fb .gpu/call_fb.sh
