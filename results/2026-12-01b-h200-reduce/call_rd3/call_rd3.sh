#!/usr/bin/env bash
# Call RD3 (docs/PERFORMANCE.md "Call RD3"), ON the GPU machine from the repo root, a fresh
# start. Here first: bash tests/gpu/prepare_ab.sh main exp/fixed-red-proto (a = main, bin = P),
# and this script copied to .gpu/call_rd3.sh. ~4 minutes.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
timeout 150 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=P=.gpu/bin \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench A/P done at ${SECONDS}s"
models=""
for n in 64 96 128; do
  python3 -c "
import json
t = json.load(open('$W/target.json')); t['sm_count'] = $n
json.dump(t, open('$W/target_w$n.json', 'w'), indent=2)"
  ms="smollm2_shape"; [ $n = 128 ] && ms="smollm2_shape llama1b_shape"
  for m in $ms; do
    python3 py/planner/main.py --checkpoint="$W/$m" --target="$W/target_w$n.json" --out="$W/${m}_w$n.tpkg" \
      --max_context=4096 2>&1 | grep "^plan:"
    models="$models,${m}_w$n"
  done
done
echo "plans done at ${SECONDS}s"
timeout 200 python3 py/tools/bench_windows.py --config=A=.gpu/a \
  --models=smollm2_shape${models},llama1b_shape --contexts=1,1024 --out_dir="$OUT/bench_workers" 2>&1 | grep -v "^I1"
echo "bench workers done at ${SECONDS}s"
call_end call_rd3 .gpu/call_rd3.sh
