#!/usr/bin/env bash
# Call FR2 (docs/PERFORMANCE.md "Call FR2"), ON the GPU machine from the repo root (branch
# fixed-residual's tree), a fresh start: call FR1's archives (.gpu/ab.tar.xz: a = main, bin =
# v48; .gpu/main_py.tar: main's planner for A's format-1 packages). ~7.5 minutes.
# 1. Bench windows A against V on a second machine start. 2. The showcase of v48 (1B, then
# SmolLM2 as time allows).
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
tar -C .gpu -xf .gpu/main_py.tar
mkdir -p "$W/f1"
for m in llama1b_shape smollm2_shape; do
  PYTHONPATH=.gpu/main_py/py python3 .gpu/main_py/py/planner/main.py --checkpoint="$W/$m" --target="$W/target.json" \
    --out="$W/f1/$m.tpkg" --max_context=4096 2>&1 | grep "^plan:"
done
timeout 150 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=V=.gpu/bin --config_packages=A="$W/f1" \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_showcase 400
call_end call_fr2 .gpu/call_fr2.sh
