#!/usr/bin/env bash
# Call IC (docs/PERFORMANCE.md "Call IC"), ON the GPU machine from the repo root, a fresh start:
# .gpu/ic/floor = main's floor with --mode=idle_copy (bazel build -c opt //tests/bench:floor).
set -u
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
timeout 200 .gpu/ic/floor --mode=idle_copy --idle_copy_kb=0,32,64,128,192 | tee "$OUT/idle_copy.json"
echo "model done at ${SECONDS}s"
timeout 150 .gpu/ic/floor --mode=idle_copy --idle_copy_chain=32 --idle_copy_kb=0,128,192 | tee "$OUT/idle_copy_chain32.json"
echo "chain 32 done at ${SECONDS}s"
timeout 120 compute-sanitizer --tool memcheck .gpu/ic/floor --mode=idle_copy --bytes=200000000 --reps=1 \
  --idle_copy_kb=0,64 > "$OUT/memcheck.txt" 2>&1; echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.txt"
timeout 150 compute-sanitizer --tool racecheck .gpu/ic/floor --mode=idle_copy --bytes=200000000 --reps=1 \
  --idle_copy_kb=64 > "$OUT/racecheck.txt" 2>&1; echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.txt"
cp .gpu/call_ic.sh "$OUT/"
echo "done at ${SECONDS}s"
