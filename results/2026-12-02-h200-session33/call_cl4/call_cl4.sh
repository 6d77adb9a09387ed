#!/usr/bin/env bash
# Call CL4 (docs/PERFORMANCE.md "Call CL4"), ON the GPU machine from the repo root: floor --mode=cluster
# twice, after memcheck and synccheck of a short run (sizes 2 and 16). Here first:
# .gpu/cl/floor = floor of the commit (bazel -c opt), carried with this script.
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
F=.gpu/cl/floor
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
for tool in memcheck synccheck; do
  timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 9 "$F" --mode=cluster --reps=1 --cluster_rounds=8 \
    --cluster_sizes=2,16 --bytes=268435456 > "$OUT/sanitize_$tool.txt" 2>&1
  echo "$tool rc=$? at ${SECONDS}s: $(grep -E 'ERROR SUMMARY' "$OUT/sanitize_$tool.txt" | tail -1)"
done
for pass in 1 2; do
  timeout 200 "$F" --mode=cluster --reps=15 > "$OUT/cluster_$pass.json" 2> "$OUT/cluster_$pass.err"
  echo "cluster pass $pass rc=$? at ${SECONDS}s"; cat "$OUT/cluster_$pass.err"
done
python3 - "$OUT/cluster_1.json" "$OUT/cluster_2.json" <<'PY'
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
for i, size in enumerate(runs[0]["sizes"]):
    print(f"size {size['cluster_size']}: resident {size['max_active_clusters']}, blocks {size['blocks']}, "
          f"cooperative {size.get('cooperative_launch')}")
    for j, r in enumerate(size["runs"]):
        other = runs[1]["sizes"][i]["runs"][j]["us_per_round"] if len(runs) > 1 else float("nan")
        print(f"  {'loaded' if r['stream'] else 'idle  '} {r['us_per_round']:7.3f} {other:7.3f} us  missed {r['missed_writes']}"
              f"  {r['stream_gbps']:7.1f} GB/s  {r['kind']}")
PY
cp "$0" "$OUT/"
