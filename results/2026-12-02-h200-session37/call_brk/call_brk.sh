#!/usr/bin/env bash
# Call BRK (thirty-seventh session; docs/PERFORMANCE.md "Call BRK"), ON the GPU machine from the
# repo root: the break test's mends on the GPU (python_gpu.py with the fork and non-finite
# checks; device_checks' api_gpu stage on tiny_bytes; nonfinite), main's checks, and floor's
# kinds whose error handling became one FirstError (short runs: they must run and print JSON).
# Here first: bash tests/gpu/prepare.sh; the module for Python 3.12 into .gpu/py (tests/gpu/README.md
# item 7); carry .gpu/bin.tar.xz and .gpu/py.
set -u
export CALL_MODELS=tiny_9x3,tiny_big
source tests/gpu/call_lib.sh
call_begin .gpu/bin.tar.xz
echo "== python_gpu.py"
PYTHONPATH=.gpu/py:py:. timeout 300 python3 tests/gpu/python_gpu.py --packages="$W" 2>&1 | tee "$OUT/python_gpu.txt"
echo "python_gpu rc=${PIPESTATUS[0]}"
echo "== api_gpu"
OUT=$OUT/api_gpu bash tests/gpu/device_checks.sh api_gpu 2>&1 | grep -av "^I1202" | tail -6
echo "device_checks api_gpu rc=${PIPESTATUS[0]}"
OUT=$OUT/nonfinite bash tests/gpu/device_checks.sh nonfinite 2>&1 | grep -E "exit|FAIL|stop before|gpu_check: "
echo "device_checks nonfinite rc=${PIPESTATUS[0]}"
echo "== checks"
call_checks
echo "== floor kinds (short runs)"
for args in "--mode=handoff --handoff_rounds=200 --reps=3" "--mode=loaded_barrier --loaded_barriers=200 --reps=3" \
            "--mode=idle_copy --idle_copy_rounds=20 --idle_copy_kb=0,64 --reps=3" \
            "--mode=cluster --cluster_sizes=1,2 --cluster_rounds=400 --reps=3"; do
  name=$(echo "$args" | sed 's/--mode=\([a-z_]*\).*/\1/')
  timeout 120 .gpu/bin/floor $args > "$OUT/floor_$name.json" 2> "$OUT/floor_$name.err"
  echo "floor $name rc=$?: $(head -c 300 "$OUT/floor_$name.json" | tr '\n' ' ')"
done
call_end call_brk docs/experiments/next/call_brk.sh
