#!/usr/bin/env bash
# Call CL7 (docs/PERFORMANCE.md "Call CL7"), ON the GPU machine from the repo root: floor's
# cluster and loaded-barrier kernels after the stop flag and the mbarrier handoff's slot became
# atomics: racecheck to the end (sizes 1, 2, 16), memcheck and synccheck, then one timed pass
# of each mode against calls CL4 / Z9. Here first: .gpu/cl/floor = floor of the commit
# (bazel -c opt), carried with this script.
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
F=.gpu/cl/floor
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
summary() { grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$1" | tail -2 | tr '\n' ' '; }
timeout 240 compute-sanitizer --tool racecheck --error-exitcode 9 "$F" --mode=cluster --reps=1 --cluster_rounds=4 \
  --cluster_sizes=1,2,16 --bytes=268435456 > "$OUT/racecheck_cluster.txt" 2>&1
echo "racecheck cluster rc=$? at ${SECONDS}s: $(summary "$OUT/racecheck_cluster.txt") runs printed: $(grep -c '"kind"' "$OUT/racecheck_cluster.txt")"
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 "$F" --mode=loaded_barrier --reps=1 --loaded_barriers=20 \
  --bytes=268435456 > "$OUT/racecheck_loaded_barrier.txt" 2>&1
echo "racecheck loaded_barrier rc=$? at ${SECONDS}s: $(summary "$OUT/racecheck_loaded_barrier.txt") runs printed: $(grep -c '"stream"' "$OUT/racecheck_loaded_barrier.txt")"
for tool in memcheck synccheck; do
  timeout 60 compute-sanitizer --tool "$tool" --error-exitcode 9 "$F" --mode=cluster --reps=1 --cluster_rounds=8 \
    --cluster_sizes=2,16 --bytes=268435456 > "$OUT/${tool}_cluster.txt" 2>&1
  echo "$tool cluster rc=$? at ${SECONDS}s: $(summary "$OUT/${tool}_cluster.txt")"
  timeout 40 compute-sanitizer --tool "$tool" --error-exitcode 9 "$F" --mode=loaded_barrier --reps=1 --loaded_barriers=50 \
    --bytes=268435456 > "$OUT/${tool}_loaded_barrier.txt" 2>&1
  echo "$tool loaded_barrier rc=$? at ${SECONDS}s: $(summary "$OUT/${tool}_loaded_barrier.txt")"
done
timeout 120 "$F" --mode=cluster --reps=15 > "$OUT/cluster.json" 2> "$OUT/cluster.err"
echo "cluster rc=$? at ${SECONDS}s"; cat "$OUT/cluster.err"
timeout 120 "$F" --mode=loaded_barrier > "$OUT/loaded_barrier.json" 2> "$OUT/loaded_barrier.err"
echo "loaded_barrier rc=$? at ${SECONDS}s"; cat "$OUT/loaded_barrier.err"
python3 - "$OUT/cluster.json" "$OUT/loaded_barrier.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
for size in c["sizes"]:
    print(f"size {size['cluster_size']}: resident {size['max_active_clusters']}, blocks {size['blocks']}")
    for r in size["runs"]:
        print(f"  {'loaded' if r['stream'] else 'idle  '} {r['us_per_round']:7.3f} us  missed {r['missed_writes']}"
              f"  {r['stream_gbps']:7.1f} GB/s  {r['kind']}")
for r in json.load(open(sys.argv[2]))["runs"]:
    print(f"  {r['stream']:5} warps {r['warps']:2} unroll {r['unroll']} stages {r['stages']:2} chunk {r['chunk']:5}"
          f" quiet {r['quiet_block0']!s:5} barrier {r['barrier_us']:7.3f} load {r['load_us']:6.3f} us"
          f" {r['stream_gbps']:7.1f} GB/s")
PY
cp "$0" "$OUT/"
