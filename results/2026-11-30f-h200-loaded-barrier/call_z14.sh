#!/usr/bin/env bash
# Call Z14, run ON the GPU machine from the repo root: floor after the review's refactor (one
# BulkCopy / InitMbarrier helper, loaded_barrier through TimedReps). Here first:
# `bash tests/gpu/prepare.sh`; carry .gpu/bin.tar.xz and this script as .gpu/call_z14.sh. ~1 min.
# The same numbers as before within their spread is the check; plus memcheck of both modes.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/bin.tar.xz
timeout 60 .gpu/bin/floor --mode=loaded_barrier --reps=3 > "$OUT/loaded_barrier.json"; echo "loaded_barrier rc=$?"
timeout 120 .gpu/bin/floor --mode=pipeline --reps=3 --pipeline_runs=1,3,50 > "$OUT/pipeline.json"; echo "pipeline rc=$?"
timeout 100 .gpu/bin/floor --mode=bulk_ring --reps=3 > "$OUT/bulk_ring.json"; echo "bulk_ring rc=$?"
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 .gpu/bin/floor --mode=loaded_barrier --reps=1 \
  --bytes=268435456 --loaded_barriers=20 > "$OUT/sanitize_loaded_barrier_memcheck.txt" 2>&1
echo "loaded_barrier memcheck rc=$?: $(tail -n 1 "$OUT/sanitize_loaded_barrier_memcheck.txt")"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for r in json.load(open(out + "/loaded_barrier.json"))["runs"]:
    print("lb", r["stream"], r["in_flight_kb_per_sm"], r["quiet_block0"], r["barrier_us"], r["load_us"], r["stream_gbps"])
for r in json.load(open(out + "/pipeline.json"))["runs"]:
    print("pipe", r["run"], r["weights"], r["us_per_layer"])
b = json.load(open(out + "/bulk_ring.json"))
print("bulk_ring plain", b["plain_1x512"], [(r["chunk"], r["stages"], r["gbps"]) for r in b["bulk_ring"]][:4])
PY
cd "$OUT" && tar czf ../call_z14.tgz . && rm -rf ./* && mv ../call_z14.tgz .
