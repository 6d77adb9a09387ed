#!/usr/bin/env bash
# Call Z (docs/PERFORMANCE.md "What a grid barrier costs while the SMs stream"), run ON the GPU
# machine from the repo root. Here first: `bash tests/gpu/prepare.sh` (main with the new mode);
# carry .gpu/bin.tar.xz and this script as .gpu/call_z.sh. ~2 min.
# 1. floor --mode=loaded_barrier (the measurement) and --mode=barrier (the idle barrier as before).
# 2. compute-sanitizer memcheck and synccheck of the new kernel on a small buffer.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/bin.tar.xz
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/gpu.csv"
timeout 240 .gpu/bin/floor --mode=loaded_barrier > "$OUT/loaded_barrier.json"; echo "loaded_barrier rc=$? at ${SECONDS}s"
timeout 60 .gpu/bin/floor --mode=barrier > "$OUT/barrier.json"; echo "barrier rc=$? at ${SECONDS}s"
for tool in memcheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/floor --mode=loaded_barrier \
    --bytes=268435456 --reps=1 --loaded_barriers=20 > "$OUT/sanitize_$tool.txt" 2>&1
  echo "$tool rc=$? at ${SECONDS}s: $(tail -1 "$OUT/sanitize_$tool.txt")"
done
timeout 120 .gpu/bin/floor --mode=loaded_barrier > "$OUT/loaded_barrier_2.json"; echo "loaded_barrier again rc=$? at ${SECONDS}s"
cat "$OUT/loaded_barrier.json"
cd "$OUT" && tar czf ../call_z.tgz . && rm -rf ./* && mv ../call_z.tgz .
