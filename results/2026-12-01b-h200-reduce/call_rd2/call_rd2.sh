#!/usr/bin/env bash
# Call RD2 (docs/PERFORMANCE.md "Call RD2"), ON the GPU machine from the repo root, a fresh
# start. Here first: bash tests/gpu/prepare.sh (main with floor --mode=reduce's spread), and
# this script copied to .gpu/call_rd2.sh. ~3 minutes.
# 1. floor --mode=reduce (the atomics against the FFN_REDUCE wave, blocks at once and spread).
# 2. Bench windows of main's build with the default plans and with plans for 128 workers.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/bin.tar.xz
.gpu/bin/floor --mode=reduce --reps=20 > "$OUT/reduce.json"; echo "reduce rc=$?"; cat "$OUT/reduce.json"
python3 -c "
import json, sys
t = json.load(open('$W/target.json')); t['sm_count'] = 128
json.dump(t, open('$W/target_w128.json', 'w'), indent=2)"
for m in llama1b_shape smollm2_shape; do
  python3 py/planner/main.py --checkpoint="$W/$m" --target="$W/target_w128.json" --out="$W/${m}_w128.tpkg" \
    --max_context=4096 2>&1 | grep "^plan:"
done
echo "plans done at ${SECONDS}s"
timeout 300 python3 py/tools/bench_windows.py --config=M=.gpu/bin \
  --models=llama1b_shape,llama1b_shape_w128,smollm2_shape,smollm2_shape_w128 \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_end call_rd2 .gpu/call_rd2.sh
