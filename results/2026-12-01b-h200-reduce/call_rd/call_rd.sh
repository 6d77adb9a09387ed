#!/usr/bin/env bash
# Call RD (docs/PERFORMANCE.md "The FFN's parts summed by integer atomics"), ON the GPU machine
# from the repo root; .gpu/rd/floor built here at the commit that added --mode=reduce.
set -u
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
.gpu/rd/floor --mode=reduce --reps=20 > "$OUT/reduce.json"; echo "reduce rc=$?"; cat "$OUT/reduce.json"
.gpu/rd/floor --mode=barrier --reps=20 > "$OUT/barrier.json"; echo "barrier rc=$?"; cat "$OUT/barrier.json"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 .gpu/rd/floor --mode=reduce --reps=1 > "$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$?: $(grep 'ERROR SUMMARY' "$OUT/memcheck.txt")"
cp .gpu/call_rd.sh "$OUT/"
echo "done at ${SECONDS}s"
