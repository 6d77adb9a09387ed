#!/usr/bin/env bash
# Call CL5 (docs/PERFORMANCE.md v59d), ON the GPU machine from the repo root: floor --mode=cluster
# at cluster sizes 1 and 2, twice, after memcheck and synccheck of a short run. Here first:
# .gpu/cl/floor = floor of the commit (bazel -c opt), carried with this script.
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
F=.gpu/cl/floor
for tool in memcheck synccheck; do
  timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 9 "$F" --mode=cluster --reps=1 --cluster_rounds=8 \
    --cluster_sizes=1 --bytes=268435456 > "$OUT/sanitize_$tool.txt" 2>&1
  echo "$tool rc=$? at ${SECONDS}s: $(grep -E 'ERROR SUMMARY' "$OUT/sanitize_$tool.txt" | tail -1)"
done
for pass in 1 2; do
  timeout 150 "$F" --mode=cluster --reps=15 --cluster_sizes=1,2 > "$OUT/cluster_$pass.json" 2> "$OUT/cluster_$pass.err"
  echo "cluster pass $pass rc=$? at ${SECONDS}s"; cat "$OUT/cluster_$pass.err"
done
python3 - "$OUT/cluster_1.json" "$OUT/cluster_2.json" <<'PY'
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
for i, size in enumerate(runs[0]["sizes"]):
    print(f"size {size['cluster_size']}: blocks {size['blocks']}")
    for j, r in enumerate(size["runs"]):
        if not r["stream"]:
            continue
        other = runs[1]["sizes"][i]["runs"][j]["us_per_round"]
        print(f"  {r['us_per_round']:7.3f} {other:7.3f} us  missed {r['missed_writes']}  {r['stream_gbps']:7.1f} GB/s  {r['kind']}")
PY
cp "$0" "$OUT/"
