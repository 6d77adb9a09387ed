#!/usr/bin/env bash
# Call Z12, second try (docs/PERFORMANCE.md "A chunk a warp"), run ON the GPU
# machine from the repo root. Here first: `bash tests/gpu/prepare.sh`; carry .gpu/bin.tar.xz and
# this script as .gpu/call_z12b.sh. ~1 min. floor --mode=pipeline runs 3, 4, 7, 9 (references) and
# 45-49, then memcheck and synccheck of runs 45-49 for one token.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/bin.tar.xz
timeout 200 .gpu/bin/floor --mode=pipeline --pipeline_runs=3,4,7,9,45,46,47,48,49 > "$OUT/pipeline.json"
echo "pipeline rc=$?"
for tool in memcheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/floor --mode=pipeline --reps=1 \
    --pipeline_tokens=1 --pipeline_runs=45,46,47,48,49 > "$OUT/sanitize_pipeline_$tool.txt" 2>&1
  echo "pipeline $tool rc=$?: $(tail -1 "$OUT/sanitize_pipeline_$tool.txt")"
done
python3 -c "import json,sys
for r in json.load(open(sys.argv[1]))['runs']: print(r['run'], r['weights'], r['chunk'], r['stages'], r['spin_ns'][1], r['max_in_flight'], r['x_in_registers'], r['warp_chunks'], r['us_per_layer'], r['block0_waits_us_per_layer'])" "$OUT/pipeline.json"
cd "$OUT" && tar czf ../call_z12b.tgz . && rm -rf ./* && mv ../call_z12b.tgz .
