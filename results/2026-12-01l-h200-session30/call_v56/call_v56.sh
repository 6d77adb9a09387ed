#!/usr/bin/env bash
# Call V56 (docs/PERFORMANCE.md, v56), ON the GPU machine from the repo root: the FFN's down
# projection from a shared-memory stage against main, with its checks.
# Here first: .gpu/ab.tar.xz with a = main's build and bin = v56's; cp this to .gpu/; carry both.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
call_checks
CALL_SECONDS=$SECONDS SAN_DEADLINE=200 bash tests/gpu/sanitize_one.sh bin racecheck tiny_9x3
call_logits a=.gpu/a v=.gpu/bin
echo "checks at ${SECONDS}s"
timeout $((575 - SECONDS)) python3 py/tools/bench_windows.py --config=n=.gpu/a --config=a=.gpu/a --config=v=.gpu/bin \
  --contexts=1,256,1024,4096 --blocks=3 --reps=5 --out_dir="$OUT/bench" | tee "$OUT/summary.txt"
echo "bench rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_v56 .gpu/call_v56.sh
