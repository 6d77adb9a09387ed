#!/usr/bin/env bash
# `gpu` test: the GPU worker against the CPU executor on the golden packages (planned for
# the RTX 3050 target, so run with --check_target=false), every context up to their max, and
# determinism. Needs a GPU: excluded from `bazel test //...` by .bazelrc; on the GPU machine
# (no Bazel there) run it from the repo root as  GPU_CHECK=.gpu/bin/gpu_check bash tests/gpu/gpu_golden_test.sh
set -euo pipefail
gpu_check=${GPU_CHECK:-host/gpu_check}
for pkg in tests/golden/tiny_9x3.tpkg tests/golden/tiny_untied.tpkg; do
  "$gpu_check" --package="$pkg" --check_target=false --contexts=1,2,5,17,31,32 --runs=5 --tokens=24
done
