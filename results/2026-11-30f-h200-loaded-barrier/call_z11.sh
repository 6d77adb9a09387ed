#!/usr/bin/env bash
# Call Z11, run ON the GPU machine from the repo root: where the pipeline model's consumers spend
# their ~0.3 us a chunk (docs/PERFORMANCE.md "Call Z10 measured"). Here first:
# `bash tests/gpu/prepare.sh`; carry .gpu/bin.tar.xz and this script as .gpu/call_z11.sh. ~3 min.
# Nsight Compute (warp states and per-instruction stall samples) on the third PipelineKernel
# launch of `floor --mode=pipeline --reps=1` for run 42 (ring 16 KB x 12, x in registers, no
# spins), run 4 (the same with x from shared memory) and run 2 (plain loads, no spins).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/bin.tar.xz
ncu_one() {  # RUN
  timeout 200 ncu --clock-control none --kernel-name regex:PipelineKernel --launch-skip 2 --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section SpeedOfLight -f -o "$OUT/ncu_run$1" \
    .gpu/bin/floor --mode=pipeline --reps=1 --pipeline_runs=$1 > "$OUT/ncu_run$1.log" 2>&1
  echo "ncu run $1: rc=$? at ${SECONDS}s: $(grep -c PROF "$OUT/ncu_run$1.log") PROF lines"
  ncu -i "$OUT/ncu_run$1.ncu-rep" --page details --csv > "$OUT/ncu_run$1_details.csv" 2>&1
  ncu -i "$OUT/ncu_run$1.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_run$1_sass.csv" 2>&1
  xz -f "$OUT/ncu_run$1_sass.csv"; rm -f "$OUT/ncu_run$1.ncu-rep"
}
ncu_one 42
ncu_one 4
ncu_one 2
echo "done at ${SECONDS}s"
cd "$OUT" && tar czf ../call_z11.tgz . && rm -rf ./* && mv ../call_z11.tgz .
