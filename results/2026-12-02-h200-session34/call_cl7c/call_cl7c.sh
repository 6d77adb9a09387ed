#!/usr/bin/env bash
# Call CL7c (docs/PERFORMANCE.md "Call CL7c"), ON the GPU machine from the repo root: floor of
# d3a182f (the volatile stop-flag poll) and of main (the stop signal as an mbarrier tested
# without waiting) on one start, interleaved, each --mode=cluster at sizes 2 and 16 and
# --mode=loaded_barrier; then racecheck, memcheck and synccheck of main's. Here first:
# .gpu/cl/floor_d3a182f and .gpu/cl/floor_new (bazel -c opt of each), carried with this script.
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
for pass in 1 2; do
  for b in d3a182f new; do
    F=.gpu/cl/floor_$b
    timeout 100 "$F" --mode=cluster --cluster_sizes=2,16 --reps=15 > "$OUT/cluster_${b}_$pass.json" 2>> "$OUT/err.txt"
    echo "cluster $b pass $pass rc=$? at ${SECONDS}s"
    timeout 100 "$F" --mode=loaded_barrier > "$OUT/loaded_barrier_${b}_$pass.json" 2>> "$OUT/err.txt"
    echo "loaded_barrier $b pass $pass rc=$? at ${SECONDS}s"
  done
done
cat "$OUT/err.txt"
F=.gpu/cl/floor_new
summary() { grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$1" | tail -1; }
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 "$F" --mode=cluster --reps=1 --cluster_rounds=4 \
  --cluster_sizes=1,2,16 --bytes=268435456 > "$OUT/racecheck_cluster.txt" 2>&1
echo "racecheck cluster rc=$? at ${SECONDS}s: $(summary "$OUT/racecheck_cluster.txt") runs printed: $(grep -c '"kind"' "$OUT/racecheck_cluster.txt")"
for tool in racecheck memcheck synccheck; do
  timeout 60 compute-sanitizer --tool "$tool" --error-exitcode 9 "$F" --mode=loaded_barrier --reps=1 --loaded_barriers=20 \
    --bytes=268435456 > "$OUT/${tool}_loaded_barrier.txt" 2>&1
  echo "$tool loaded_barrier rc=$? at ${SECONDS}s: $(summary "$OUT/${tool}_loaded_barrier.txt") runs printed: $(grep -c '"stream"' "$OUT/${tool}_loaded_barrier.txt")"
  [ "$tool" = racecheck ] && continue
  timeout 60 compute-sanitizer --tool "$tool" --error-exitcode 9 "$F" --mode=cluster --reps=1 --cluster_rounds=8 \
    --cluster_sizes=2,16 --bytes=268435456 > "$OUT/${tool}_cluster.txt" 2>&1
  echo "$tool cluster rc=$? at ${SECONDS}s: $(summary "$OUT/${tool}_cluster.txt") runs printed: $(grep -c '"kind"' "$OUT/${tool}_cluster.txt")"
done
(cd "$OUT" && tar czf runs.tar.gz ./*.json ./*check_*.txt && rm -f ./*.json ./*check_*.txt)
python3 - "$OUT/runs.tar.gz" <<'PY'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
get = lambda n: json.load(t.extractfile("./" + n))
cols = [("d3a182f", 1), ("new", 1), ("d3a182f", 2), ("new", 2)]
print("cluster: us a round (GB/s) for", " / ".join(f"{b} {p}" for b, p in cols))
c = {k: get(f"cluster_{k[0]}_{k[1]}.json") for k in cols}
for i, size in enumerate(c[("new", 1)]["sizes"]):
    for j, r in enumerate(size["runs"]):
        cells = [c[k]["sizes"][i]["runs"][j] for k in cols]
        print(f"  {size['cluster_size']:2} {'loaded' if r['stream'] else 'idle  '} "
              + "  ".join(f"{x['us_per_round']:6.3f} ({x['stream_gbps']:6.0f}) m{x['missed_writes']}" for x in cells)
              + f"  {r['kind'][:50]}")
l = {k: get(f"loaded_barrier_{k[0]}_{k[1]}.json") for k in cols}
print("loaded_barrier: barrier us (GB/s) for", " / ".join(f"{b} {p}" for b, p in cols))
for j, r in enumerate(l[("new", 1)]["runs"]):
    cells = [l[k]["runs"][j] for k in cols]
    print(f"  {r['stream']:5} w{r['warps']:2} u{r['unroll']} s{r['stages']:2} c{r['chunk']:5} q{int(r['quiet_block0'])} "
          + "  ".join(f"{x['barrier_us']:7.3f} ({x['stream_gbps']:6.0f})" for x in cells))
PY
cp "$0" "$OUT/"
