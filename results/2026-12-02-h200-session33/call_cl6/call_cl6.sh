#!/usr/bin/env bash
# Call CL6 (docs/PERFORMANCE.md, after call CL5), ON the GPU machine from the repo root:
# compute-sanitizer memcheck, synccheck and racecheck of floor --mode=cluster, short runs, at
# every cluster size (memcheck had stopped at size 1's st.async in call CL5). Here first:
# .gpu/cl/floor = floor of the commit (bazel -c opt), carried with this script.
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
F=.gpu/cl/floor
for tool in memcheck synccheck racecheck; do
  timeout 170 compute-sanitizer --tool "$tool" --error-exitcode 9 "$F" --mode=cluster --reps=1 --cluster_rounds=4 \
    --cluster_sizes=1,2,4,8,16 --bytes=268435456 > "$OUT/sanitize_$tool.txt" 2>&1
  echo "$tool rc=$? at ${SECONDS}s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize_$tool.txt" | tail -2 | tr '\n' ' ')"
  grep -c '"kind"' "$OUT/sanitize_$tool.txt" | sed 's/^/  runs printed: /'
done
cp "$0" "$OUT/"
