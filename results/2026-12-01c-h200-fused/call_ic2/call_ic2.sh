#!/usr/bin/env bash
# Call IC2, ON the GPU machine from the repo root: racecheck and synccheck of floor
# --mode=idle_copy on a short run (call IC's racecheck of 900 rounds ran past its 150 s).
set -u
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
for tool in racecheck synccheck memcheck; do
  timeout 100 compute-sanitizer --tool $tool .gpu/ic/floor --mode=idle_copy --bytes=200000000 --reps=1 \
    --idle_copy_rounds=2 --idle_copy_kb=0,64,192 > "$OUT/$tool.txt" 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$OUT/$tool.txt" | tail -2 | tr '\n' ' ')"
done
cp .gpu/call_ic2.sh "$OUT/"
