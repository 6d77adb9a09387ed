#!/usr/bin/env bash
# Call Z13, second try (docs/PERFORMANCE.md "A producer per warp"), run ON the GPU machine from the repo
# root. Here first: `bash tests/gpu/prepare.sh`; carry .gpu/bin.tar.xz and this script as
# .gpu/call_z13b.sh. ~2 min. floor --mode=pipeline runs 1-4 (references) and 50-54, then
# memcheck, synccheck and racecheck of runs 50-54 (racecheck: runs 50 and 53) for one token.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/bin.tar.xz
timeout 200 .gpu/bin/floor --mode=pipeline --pipeline_runs=1,2,3,4,50,51,52,53,54 > "$OUT/pipeline.json"
echo "pipeline rc=$?"
for tool in memcheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/floor --mode=pipeline --reps=1 \
    --pipeline_tokens=1 --pipeline_runs=50,51,52,53,54 > "$OUT/sanitize_pipeline_$tool.txt" 2>&1
  echo "pipeline $tool rc=$?: $(tail -n 1 "$OUT/sanitize_pipeline_$tool.txt")"
done
timeout 240 compute-sanitizer --tool racecheck --error-exitcode 9 .gpu/bin/floor --mode=pipeline --reps=1 \
  --pipeline_tokens=1 --pipeline_runs=50,53 > "$OUT/sanitize_pipeline_racecheck.txt" 2>&1
echo "pipeline racecheck rc=$?: $(tail -n 1 "$OUT/sanitize_pipeline_racecheck.txt")"
python3 -c "import json,sys
for r in json.load(open(sys.argv[1]))['runs']: print(r['run'], r['weights'], r['chunk'], r['stages'], r['spin_ns'][1], r['work'], r['warp_pipeline'], r['us_per_layer'], r['block0_waits_us_per_layer'])" "$OUT/pipeline.json"
cd "$OUT" && tar czf ../call_z13b.tgz . && rm -rf ./* && mv ../call_z13b.tgz .
