#!/usr/bin/env bash
# Call Z9, run ON the GPU machine from the repo root: the final floor build (after the review's
# mends, 1bfcb80) once more. Here first: `bash tests/gpu/prepare.sh`; carry .gpu/bin.tar.xz and
# this script as .gpu/call_z9.sh. ~1 min.
# 1. floor --mode=loaded_barrier and a few --mode=pipeline runs, 3 reps each: the same numbers
#    as calls Z-Z7 within their spread. 2. memcheck and synccheck of both kernels' paths.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/bin.tar.xz
timeout 60 .gpu/bin/floor --mode=loaded_barrier --reps=3 > "$OUT/loaded_barrier.json"; echo "loaded_barrier rc=$?"
timeout 120 .gpu/bin/floor --mode=pipeline --reps=3 --pipeline_runs=1,2,3,4,19,32,36,38 > "$OUT/pipeline.json"
echo "pipeline rc=$?"
for tool in memcheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/floor --mode=pipeline --reps=1 \
    --pipeline_tokens=1 --pipeline_runs=3,19,26,32,38 > "$OUT/sanitize_pipeline_$tool.txt" 2>&1
  echo "pipeline $tool rc=$?: $(tail -1 "$OUT/sanitize_pipeline_$tool.txt")"
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/floor --mode=loaded_barrier --reps=1 \
    --bytes=268435456 --loaded_barriers=20 > "$OUT/sanitize_loaded_barrier_$tool.txt" 2>&1
  echo "loaded_barrier $tool rc=$?: $(tail -1 "$OUT/sanitize_loaded_barrier_$tool.txt")"
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for r in json.load(open(out + "/loaded_barrier.json"))["runs"]:
    print("lb", r["stream"], r["in_flight_kb_per_sm"], r["quiet_block0"], r["barrier_us"], r["load_us"], r["stream_gbps"])
for r in json.load(open(out + "/pipeline.json"))["runs"]:
    print("pipe", r["run"], r["weights"], r["us_per_layer"])
PY
cd "$OUT" && tar czf ../call_z9.tgz . && rm -rf ./* && mv ../call_z9.tgz .
