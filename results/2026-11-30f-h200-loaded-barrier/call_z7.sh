#!/usr/bin/env bash
# Call Z7 (docs/PERFORMANCE.md "A paced L2 prefetch during the phases"), run ON the GPU machine
# from the repo root. Here first: `bash tests/gpu/prepare.sh`; carry .gpu/bin.tar.xz and this
# script as .gpu/call_z7.sh. ~1 min. floor --mode=pipeline, with the paced L2 prefetch runs (36-40).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/bin.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/gpu.csv"
timeout 300 .gpu/bin/floor --mode=pipeline > "$OUT/pipeline.json"; echo "pipeline rc=$? at ${SECONDS}s"
python3 -c "import json,sys
for r in json.load(open(sys.argv[1]))['runs']: print(r['weights'], r['chunk'], r['stages'], r['spin_ns'][1], r['work'], r['max_in_flight'], r['one_waiter'], r['loader_sleep_ns'], r['chain_phases'], r['l2_prefetch_interval_ns'], r['us_per_layer'], r['block0_waits_us_per_layer'])" "$OUT/pipeline.json"
cd "$OUT" && tar czf ../call_z7.tgz . && rm -rf ./* && mv ../call_z7.tgz .
