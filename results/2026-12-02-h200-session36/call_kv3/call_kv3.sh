#!/usr/bin/env bash
# Call KV3 (thirty-sixth session; docs/PERFORMANCE.md "Call KV2"), ON the GPU machine from the repo
# root: gpu_check --stop_before_nonfinite_check now runs only that check (call KV2's build also ran
# the step-order check, which tiny_big's non-finite steps fail by design); device_checks'
# nonfinite stage with it.
# Here first: bash tests/gpu/prepare.sh; carry .gpu/bin.tar.xz.
set -u
export CALL_MODELS=tiny_big
source tests/gpu/call_lib.sh
call_begin .gpu/bin.tar.xz
OUT=$OUT/nonfinite bash tests/gpu/device_checks.sh nonfinite 2>&1 | grep -E "exit|FAIL|stop before|gpu_check: "
echo "device_checks nonfinite rc=${PIPESTATUS[0]}"
call_end call_kv3 docs/experiments/next/call_kv3.sh
