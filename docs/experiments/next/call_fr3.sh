#!/usr/bin/env bash
# Call FR3 (docs/PERFORMANCE.md "Call FR2 measured"): v48 against the last format-1 main on a second,
# separately started machine, ON the GPU machine from the repo root, a fresh start. Here
# first (main is v48, package format 2; A is the last format-1 main, 48745c5):
#   bash tests/gpu/prepare_ab.sh 48745c5 main                 (a = format 1, bin = v48)
#   git archive --prefix=main_py/ 48745c5 py/planner > .gpu/main_py.tar   (A's planner)
# and this script copied to .gpu/call_fr3.sh. ~3 minutes. Prediction: as calls FR1 / FR2
# within 1 point (1B -2 to -3.5%, SmolLM2 -8.5 to -12.5% at contexts 1 and 1024).
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
tar -C .gpu -xf .gpu/main_py.tar
mkdir -p "$W/f1"
for m in llama1b_shape smollm2_shape; do
  PYTHONPATH=.gpu/main_py/py python3 .gpu/main_py/py/planner/main.py --checkpoint="$W/$m" --target="$W/target.json" \
    --out="$W/f1/$m.tpkg" --max_context=4096 2>&1 | grep "^plan:"
done
timeout 90 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=V=.gpu/bin --config_packages=A="$W/f1" \
  --contexts=1,1024 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"

call_end call_fr3 .gpu/call_fr3.sh
