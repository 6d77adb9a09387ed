#!/usr/bin/env bash
# Call S1 (docs/PERFORMANCE.md "Calls S1-S3"), ON the GPU machine from the repo root, a fresh
# start: llama-bench built in the background while main's checks and the floor modes run.
# Here first: bash tests/gpu/prepare.sh && bash tests/gpu/prepare_llamacpp.sh
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=llama1b_shape call_begin .gpu/bin.tar.xz
mkdir -p /tmp/llamacpp_out
(LLAMACPP_JOBS=12 OUT=/tmp/llamacpp_out bash tests/gpu/showcase.sh build_llamacpp > /tmp/llamacpp_build.log 2>&1
 echo "build_llamacpp rc=$?" >> /tmp/llamacpp_build.log) &
bpid=$!
for mode in barrier reduce; do
  timeout 90 .gpu/bin/floor --mode=$mode --reps=5 > "$OUT/floor_$mode.json"; echo "floor $mode rc=$? at ${SECONDS}s"
done
timeout 90 .gpu/bin/floor --mode=idle_copy --idle_copy_kb=0,64,192 --reps=5 > "$OUT/floor_idle_copy.json"
echo "floor idle_copy rc=$? at ${SECONDS}s"
grep -hE "us_per|kind" "$OUT"/floor_*.json | head -40
call_checks
echo "checks done at ${SECONDS}s"
wait $bpid
tail -8 /tmp/llamacpp_build.log
echo "build done at ${SECONDS}s"
call_end call_s1 .gpu/call_s1.sh
mv /tmp/llamacpp_out/llamacpp_bin.part_* "$OUT/" && ls -la "$OUT"
