#!/usr/bin/env bash
# Call FR1 (docs/PERFORMANCE.md "v48: the residual stream in fixed point"), ON the GPU machine
# from the repo root (branch fixed-residual's tree), a fresh start. Here first:
#   bash tests/gpu/prepare_ab.sh main fixed-residual     (a = main, format 1; bin = v48, format 2)
#   git archive --prefix=main_py/ main py/planner > .gpu/main_py.tar   (main's planner for A's packages)
# and this script copied to .gpu/call_fr1.sh. ~8 minutes.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
tar -C .gpu -xf .gpu/main_py.tar
mkdir -p "$W/f1"
for m in llama1b_shape smollm2_shape; do  # format-1 packages of the same checkpoints for A
  PYTHONPATH=.gpu/main_py/py python3 .gpu/main_py/py/planner/main.py --checkpoint="$W/$m" --target="$W/target.json" \
    --out="$W/f1/$m.tpkg" --max_context=4096 2>&1 | grep "^plan:"
done
call_checks
echo "checks done at ${SECONDS}s"
BIN_DIR=.gpu/bin bash tests/gpu/device_checks.sh nonfinite 2>&1 | grep -E "exit|FAIL"
for m in llama1b_shape smollm2_shape; do  # the big shapes: GPU against the CPU executor
  .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1,2,100,1000 --cpu_contexts=1,2 --runs=3 --tokens=128 \
    --sampling_checks=0 --check_target=false > "$OUT/gpu_check_$m.txt" 2>&1
  echo "$m rc=$?: $(grep -E 'context +1:|context +2:|determinism|PASS|FAIL' "$OUT/gpu_check_$m.txt" | tr '\n' ' ')"
done
echo "big checks done at ${SECONDS}s"
timeout 150 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=V=.gpu/bin --config_packages=A="$W/f1" \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
timeout $((570 - SECONDS)) compute-sanitizer --tool racecheck --error-exitcode 9 .gpu/bin/gpu_check \
  --package=$W/tiny_9x3.tpkg --check_target=false --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=2 \
  --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 > "$OUT/sanitize_racecheck.txt" 2>&1
echo "racecheck rc=$? at ${SECONDS}s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/sanitize_racecheck.txt" | tail -2)"
call_end call_fr1 .gpu/call_fr1.sh
