#!/usr/bin/env bash
# Call Z8, run ON the GPU machine from the repo root. Here first: `bash tests/gpu/prepare.sh`;
# carry .gpu/bin.tar.xz and this script as .gpu/call_z8.sh. ~5 min.
# 1. compute-sanitizer memcheck and synccheck of the pipeline model's changed kernel: one run
#    of each new kind (ring; cp.async ring; cap 2; one waiter; loader sleep; chained phases
#    with the paced L2 prefetch; loads), one token, --reps=1.
# 2. main's worker (unchanged this session) in bench windows at contexts 1, 1024 and 4096,
#    both shapes: where main stands on this machine start.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/bin.tar.xz
for tool in memcheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/floor --mode=pipeline --reps=1 \
    --pipeline_tokens=1 --pipeline_runs=1,3,12,19,26,32,38 > "$OUT/sanitize_pipeline_$tool.txt" 2>&1
  echo "pipeline $tool rc=$? at ${SECONDS}s: $(tail -1 "$OUT/sanitize_pipeline_$tool.txt")"
done
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
timeout 300 python3 py/tools/bench_windows.py --config=main=.gpu/bin --contexts=1,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "done at ${SECONDS}s"
cd "$OUT" && tar czf ../call_z8.tgz . && rm -rf ./* && mv ../call_z8.tgz .
