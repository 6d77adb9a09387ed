#!/usr/bin/env bash
# Call DR (thirty-eighth session's diff read; docs/PERFORMANCE.md "Call DR"), ON the GPU machine
# from the repo root: python_gpu.py after its fork helper moved to tests/forked.py, device_checks'
# api_gpu stage (decode's chat, whose answers go through ReplaceInvalidUtf8, now one
# ForEachUtf8Sequence with InvalidUtf8At), and main's checks.
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
echo "== checks"
call_checks
call_end call_dr docs/experiments/next/call_dr.sh
