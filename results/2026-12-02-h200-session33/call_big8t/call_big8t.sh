#!/usr/bin/env bash
# Call BIG8T (docs/PERFORMANCE.md), ON the GPU machine from the repo root, main's build: the 8B
# shape's traces at contexts 32 and 4064 (showcase.sh's trace step; call BIG5 ran its showcase
# without them), and how many clusters of 3, 5, 6, 7, 12 and 14 blocks can be resident (floor
# --mode=cluster, a short run: does a size that is not a power of two tile the GPCs better?).
# Here first: bash tests/gpu/prepare.sh (in a checkout of the commit); carry .gpu/bin.tar.xz and
# this script; run `bash .gpu/call_big8t.sh 2>&1 | tail -40`.
set -u
source tests/gpu/call_lib.sh
M=llama8b_shape
CALL_MODELS=$M call_begin .gpu/bin.tar.xz
echo "$M made at ${SECONDS}s: $(du -sh "$W/$M.tpkg" | cut -f1)"
timeout 90 .gpu/bin/floor --mode=cluster --reps=3 --cluster_rounds=200 --cluster_sizes=3,5,6,7,12,14 \
  > "$OUT/cluster_sizes.json" 2> "$OUT/cluster_sizes.err"
echo "cluster sizes rc=$? at ${SECONDS}s"
python3 -c "
import json, sys
for s in json.load(open(sys.argv[1]))['sizes']:
    print(f\"size {s['cluster_size']}: resident {s['max_active_clusters']}, blocks {s['blocks']}\")" "$OUT/cluster_sizes.json"
best=$(bash tests/gpu/floor_once.sh .gpu/bin "$OUT/floor.json")
echo "floor best ${best} GB/s at ${SECONDS}s"
mkdir -p "$OUT/$M"
timeout 240 .gpu/bin/gpu_check --package="$W/$M.tpkg" --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
  --tolerance="$(bash tests/gpu/gpu_check_tolerance.sh "$M")" \
  --trace_out="$W/trace_$M" --trace_contexts=32,4064 > "$OUT/$M/gpu_check_trace.txt" 2>&1
echo "traced gpu_check rc=$? at ${SECONDS}s"; grep -E "trace|FAIL|PASS|rel" "$OUT/$M/gpu_check_trace.txt" | head -8
for c in 32 4064; do
  xz -c "$W/trace_${M}_$c.json" > "$OUT/$M/trace_$c.json.xz"
  python3 py/tools/trace_report.py --trace="$W/trace_${M}_$c.json" --bandwidth_gbps="$best" \
    --png="$OUT/$M/timeline_$c.png" --balance_png="$OUT/$M/balance_$c.png" > "$OUT/$M/report_$c.txt"
  echo "report $c rc=$? at ${SECONDS}s"; tail -12 "$OUT/$M/report_$c.txt"
done
call_end call_big8t .gpu/call_big8t.sh
