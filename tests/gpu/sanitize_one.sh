#!/usr/bin/env bash
# ON the GPU machine: one compute-sanitizer run of a build's gpu_check on a tiny package (contexts 1
# and 130, two tokens), for the call scripts of an A/B (results/*/call_*/call_*.sh).
#   bash tests/gpu/sanitize_one.sh BUILD TOOL PACKAGE [GPU_CHECK_FLAG...]
#   e.g. SAN_DEADLINE=330 bash tests/gpu/sanitize_one.sh bin racecheck tiny_9x3
# BUILD: a folder under .gpu (gpu_check inside); TOOL: memcheck | synccheck | racecheck | initcheck;
# PACKAGE: /tmp/tileinfer_models/PACKAGE.tpkg (device_checks.sh tiny writes them). The run is cut at
# 110 s and at SAN_DEADLINE seconds into the calling script (its $SECONDS, exported as CALL_SECONDS;
# default 565), and skipped when fewer than 20 s are left. Prints the last two lines and the exit code.
set -u
b=${1:?usage: sanitize_one.sh BUILD TOOL PACKAGE [FLAG...]}; tool=${2:?TOOL}; pkg=${3:?PACKAGE}; shift 3
t=$((${SAN_DEADLINE:-565} - ${CALL_SECONDS:-0}))
[ $t -gt 20 ] || { echo "== $b $tool $pkg: skipped, out of time at ${CALL_SECONDS:-0}s"; exit 0; }
[ $t -lt 110 ] || t=110
echo "== $b $tool $pkg $*"
timeout $t compute-sanitizer --tool "$tool" --error-exitcode 9 ".gpu/$b/gpu_check" \
  --package="/tmp/tileinfer_models/$pkg.tpkg" --check_target=false --contexts=1,130 --cpu_contexts=130 \
  --runs=1 --tokens=2 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 "$@" 2>&1 | tail -2
echo "rc=${PIPESTATUS[0]} at $((${CALL_SECONDS:-0} + SECONDS))s"
