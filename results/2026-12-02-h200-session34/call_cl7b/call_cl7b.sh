#!/usr/bin/env bash
# Call CL7b (docs/PERFORMANCE.md "Call CL7b"), ON the GPU machine from the repo root: three
# builds of floor on one start (the volatile stop-flag poll of d3a182f, call CL7's atomics read
# before the loads in de9284b, main's read behind them), each --mode=cluster at sizes 2 and 16
# and --mode=loaded_barrier; then racecheck of main's. Here first: .gpu/cl/floor (main),
# .gpu/cl/floor_d3a182f and .gpu/cl/floor_de9284b (bazel -c opt of each), carried with this script.
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
for b in d3a182f de9284b main; do
  F=.gpu/cl/floor_$b; [ "$b" = main ] && F=.gpu/cl/floor
  timeout 100 "$F" --mode=cluster --cluster_sizes=2,16 --reps=15 > "$OUT/cluster_$b.json" 2>> "$OUT/err.txt"
  echo "cluster $b rc=$? at ${SECONDS}s"
  timeout 100 "$F" --mode=loaded_barrier > "$OUT/loaded_barrier_$b.json" 2>> "$OUT/err.txt"
  echo "loaded_barrier $b rc=$? at ${SECONDS}s"
done
cat "$OUT/err.txt"
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 .gpu/cl/floor --mode=cluster --reps=1 --cluster_rounds=4 \
  --cluster_sizes=1,2 --bytes=268435456 > "$OUT/racecheck_cluster.txt" 2>&1
echo "racecheck cluster rc=$? at ${SECONDS}s: $(grep 'RACECHECK SUMMARY' "$OUT/racecheck_cluster.txt") runs printed: $(grep -c '"kind"' "$OUT/racecheck_cluster.txt")"
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 .gpu/cl/floor --mode=loaded_barrier --reps=1 --loaded_barriers=20 \
  --bytes=268435456 > "$OUT/racecheck_loaded_barrier.txt" 2>&1
echo "racecheck loaded_barrier rc=$? at ${SECONDS}s: $(grep 'RACECHECK SUMMARY' "$OUT/racecheck_loaded_barrier.txt") runs printed: $(grep -c '"stream"' "$OUT/racecheck_loaded_barrier.txt")"
(cd "$OUT" && tar czf runs.tar.gz ./*.json ./racecheck_*.txt && rm -f ./*.json ./racecheck_*.txt)
python3 - "$OUT/runs.tar.gz" <<'PY'
import io, json, sys, tarfile
t = tarfile.open(sys.argv[1])
get = lambda n: json.load(t.extractfile("./" + n))
builds = ["d3a182f", "de9284b", "main"]
c = {b: get(f"cluster_{b}.json") for b in builds}
print("cluster: us a round (GB/s) for", " / ".join(builds))
for i, size in enumerate(c["main"]["sizes"]):
    for j, r in enumerate(size["runs"]):
        cells = [c[b]["sizes"][i]["runs"][j] for b in builds]
        print(f"  {size['cluster_size']:2} {'loaded' if r['stream'] else 'idle  '} "
              + "  ".join(f"{x['us_per_round']:6.3f} ({x['stream_gbps']:6.0f}) m{x['missed_writes']}" for x in cells)
              + f"  {r['kind'][:60]}")
l = {b: get(f"loaded_barrier_{b}.json") for b in builds}
print("loaded_barrier: barrier us (GB/s) for", " / ".join(builds))
for j, r in enumerate(l["main"]["runs"]):
    cells = [l[b]["runs"][j] for b in builds]
    print(f"  {r['stream']:5} w{r['warps']:2} u{r['unroll']} s{r['stages']:2} c{r['chunk']:5} q{int(r['quiet_block0'])} "
          + "  ".join(f"{x['barrier_us']:7.3f} ({x['stream_gbps']:6.0f})" for x in cells))
PY
cp "$0" "$OUT/"
