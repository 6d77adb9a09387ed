#!/usr/bin/env bash
# Call HO (docs/PERFORMANCE.md v60), ON the GPU machine from the repo root: floor --mode=handoff
# twice, then memcheck, synccheck and racecheck of a short run. Here first: .gpu/cl/floor_ho =
# floor of the commit (bazel -c opt), carried with this script.
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
F=.gpu/cl/floor_ho
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
for pass in 1 2; do
  timeout 120 "$F" --mode=handoff > "$OUT/handoff_$pass.json" 2>> "$OUT/err.txt"
  echo "handoff pass $pass rc=$? at ${SECONDS}s"
done
cat "$OUT/err.txt"
for tool in memcheck synccheck racecheck; do
  timeout 100 compute-sanitizer --tool "$tool" --error-exitcode 9 "$F" --mode=handoff --reps=1 --handoff_rounds=4 \
    > "$OUT/${tool}_handoff.txt" 2>&1
  echo "$tool rc=$? at ${SECONDS}s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/${tool}_handoff.txt" | tail -1)" \
       "runs printed: $(grep -c '"kind"' "$OUT/${tool}_handoff.txt")"
done
python3 - "$OUT/handoff_1.json" "$OUT/handoff_2.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for sa, sb in zip(a["shapes"], b["shapes"]):
    print(f"{sa['shape']} (words {sa['words']}, groups {sa['groups']}, blocks {sa['blocks']})")
    for ra, rb in zip(sa["runs"], sb["runs"]):
        print(f"  {ra['us_per_round']:6.3f} {rb['us_per_round']:6.3f} us  missed {ra['missed_reads']} {rb['missed_reads']}  {ra['kind']}")
PY
(cd "$OUT" && tar czf sanitize.tar.gz ./*check_handoff.txt && rm -f ./*check_handoff.txt)
cp "$0" "$OUT/"
