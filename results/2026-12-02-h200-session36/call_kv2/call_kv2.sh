#!/usr/bin/env bash
# Call KV2 (thirty-sixth session; docs/PERFORMANCE.md "Call KV2"), ON the GPU machine from the repo
# root: the K/V-reuse mends of a break test. A request its caller stops at the token whose step
# is non-finite (the worker still runs that step) must leave the next request what a run from
# position 0 gives: gpu_check --stop_before_nonfinite_check on tiny_big with the mended build
# (.gpu/bin) and with the same source without the GPU executor's mend (.gpu/nofix: the check must
# FAIL on the GPU there, and pass on the CPU); device_checks' nonfinite stage; the SmolLM2 shape's
# K/V reuse line; racecheck (did not finish in call KV), memcheck and synccheck of tiny_9x3 with
# the reuse check, and memcheck of the new check.
# Here first: bash tests/gpu/prepare.sh; the nofix gpu_check packed as .gpu/nofix.tar.xz; carry both.
set -u
export CALL_MODELS=smollm2_shape,tiny_9x3,tiny_big
source tests/gpu/call_lib.sh
call_begin .gpu/bin.tar.xz .gpu/nofix.tar.xz
for b in bin nofix; do
  timeout 120 .gpu/$b/gpu_check --package="$W/tiny_big.tpkg" --contexts= --runs=0 --sampling_checks=0 \
    --stream_checks=false --stop_before_nonfinite_check > "$OUT/stop_nonfinite_$b.txt" 2>&1
  echo "$b: rc=$? $(grep -E 'stop before|gpu_check: ' "$OUT/stop_nonfinite_$b.txt" | tr '\n' ' ')"
done
OUT=$OUT/nonfinite bash tests/gpu/device_checks.sh nonfinite 2>&1 | grep -E "exit|FAIL|stop before|gpu_check: "
timeout 120 .gpu/bin/gpu_check --package="$W/smollm2_shape.tpkg" --contexts=1,100 --cpu_contexts=1 --runs=2 --tokens=128 \
  --sampling_checks=0 --cpu_generate_tokens=0 > "$OUT/gpu_check_smollm2_shape.txt" 2>&1
echo "smollm2_shape rc=$?: $(grep -E 'K/V reuse|determinism|gpu_check: ' "$OUT/gpu_check_smollm2_shape.txt" | tr '\n' ' ')"
for tool in racecheck memcheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/gpu_check --package="$W/tiny_9x3.tpkg" \
    --check_target=false --contexts=1 --cpu_contexts=1 --runs=1 --tokens=2 --sampling_checks=0 \
    --stream_checks=false --cpu_generate_tokens=0 > "$OUT/sanitize_kv_$tool.txt" 2>&1
  echo "$tool rc=$?: $(grep -E 'K/V reuse|SUMMARY|gpu_check: ' "$OUT/sanitize_kv_$tool.txt" | tr '\n' ' ') at ${SECONDS}s"
done
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 .gpu/bin/gpu_check --package="$W/tiny_big.tpkg" \
  --contexts= --runs=0 --sampling_checks=0 --stream_checks=false --stop_before_nonfinite_check \
  > "$OUT/sanitize_stop_memcheck.txt" 2>&1
echo "memcheck of the stop check rc=$?: $(grep -E 'SUMMARY|gpu_check: ' "$OUT/sanitize_stop_memcheck.txt" | tr '\n' ' ') at ${SECONDS}s"
call_end call_kv2 docs/experiments/next/call_kv2.sh
