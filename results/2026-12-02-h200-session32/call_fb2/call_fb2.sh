#!/usr/bin/env bash
# Call FB2 (docs/PERFORMANCE.md), ON the GPU machine from the repo root: floor --mode=barrier with
# the sleeping polls and kCounterWake. Here first: .gpu/fb2/floor = floor of main (bazel -c opt).
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
for pass in 1 2; do
  timeout 120 .gpu/fb2/floor --mode=barrier --reps=20 > "$OUT/barrier_$pass.json"; echo "barrier pass $pass rc=$? at ${SECONDS}s"
  grep -o '"kind": "[^"]*", "poll_sleep_ns": [0-9]*, "us_per_barrier": [0-9.]*, "missed_writes": [0-9]*' "$OUT/barrier_$pass.json"
done
cp "$0" "$OUT/"
