#!/usr/bin/env bash
# Call PY2 (thirty-seventh session; docs/PERFORMANCE.md "Call PY2"), ON the GPU machine from the
# repo root: the Python module on the GPU executor for the first time (tests/gpu/python_gpu.py,
# tests/gpu/README.md item 7), and main's build at dad904e checked again (the request is now
# checked once, in GenerateFromKeptRows: 9c4d7eb; gpu_check's SameBits: dad904e).
# Here first: bash tests/gpu/prepare.sh; the module built for Python 3.12 into .gpu/py (item 7);
# carry .gpu/bin.tar.xz and .gpu/py.
set -u
export CALL_MODELS=tiny_9x3,tiny_big,smollm2_shape
source tests/gpu/call_lib.sh
call_begin .gpu/bin.tar.xz
python3 --version
echo "== python_gpu.py"
PYTHONPATH=.gpu/py:py:. timeout 300 python3 tests/gpu/python_gpu.py --packages="$W" 2>&1 | tee "$OUT/python_gpu.txt"
echo "python_gpu rc=${PIPESTATUS[0]}"
echo "== checks"
call_generation smollm2_shape
grep -E "K/V reuse" "$OUT/gpu_check_smollm2_shape.txt"
call_checks
OUT=$OUT/nonfinite bash tests/gpu/device_checks.sh nonfinite 2>&1 | grep -E "exit|FAIL|stop before|gpu_check: "
echo "device_checks nonfinite rc=${PIPESTATUS[0]}"
OUT=$OUT/api_gpu bash tests/gpu/device_checks.sh api_gpu 2>&1 | tail -15
echo "device_checks api_gpu rc=${PIPESTATUS[0]}"
call_end call_py2 docs/experiments/next/call_py2.sh
