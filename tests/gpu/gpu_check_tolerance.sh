#!/usr/bin/env bash
# gpu_check's --tolerance (GPU against the CPU executor, max relative logit error) for a model of
# tests/gpu/make_models.py:   tol=$(bash tests/gpu/gpu_check_tolerance.sh MODEL)
# 2e-3 (gpu_check's default) for every model but the Llama 3.1 8B shape, whose random weights
# amplify FP32 rounding: GPU against the CPU executor 2.5-2.6e-3 and against transformers FP32
# 3.4-3.6e-3 at contexts 1 and 2, with the same argmax (docs/PERFORMANCE.md, call TOL): 5e-3.
set -u
case "${1:?usage: gpu_check_tolerance.sh MODEL}" in
  llama8b_shape) echo 5e-3 ;;
  *) echo 2e-3 ;;
esac
