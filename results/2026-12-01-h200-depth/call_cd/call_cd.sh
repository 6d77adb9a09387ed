#!/usr/bin/env bash
# Call CD (docs/PERFORMANCE.md "The planner's default chunk count"), ON the GPU machine from
# the repo root, a fresh start (the second for SmolLM2's 22 chunks). Here first: .gpu/ds.tar.xz
# (its bin: main v46's worker and host) and this script copied to .gpu/call_cd.sh. The
# planner here is the branch's: its default gives SmolLM2 22 chunks a K/V head. ~5 minutes.
# 1. The tiny models' checks with the new default plans (GPU = CPU, 10 x 500 tokens, seeded
#    sampling, golden; the tiny models now have 4 chunks a head).
# 2. Bench windows: SmolLM2 planned by the new default (C22) against the old (C44), one binary.
# 3. The SmolLM2 showcase with the new default plan.
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=smollm2_shape call_begin .gpu/ds.tar.xz
python3 py/planner/main.py --checkpoint="$W/smollm2_shape" --target="$W/target.json" \
  --out="$W/smollm2_shape_c44.tpkg" --max_context=4096 --attention_chunks=44 2>&1 | grep "^plan:"
call_checks
echo "checks done at ${SECONDS}s"
timeout 150 python3 py/tools/bench_windows.py --config=A=.gpu/bin --models=smollm2_shape_c44,smollm2_shape \
  --contexts=1,256,1024,2048,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
SHOWCASE_TRACE=0 SHOWCASE_FLAGS=--runtimes=tileinfer,torch_compile timeout $((560 - SECONDS)) bash tests/gpu/showcase.sh smollm2_shape 2>&1 |
  grep -E "^\| [0-9]|^\| tileinfer|^\| torch|^\| floor" | head -12
cp "$OUT/floor.json" "$OUT/smollm2_shape/floor.json" 2>/dev/null
echo "smollm2_shape showcase at ${SECONDS}s"
call_end call_cd .gpu/call_cd.sh
