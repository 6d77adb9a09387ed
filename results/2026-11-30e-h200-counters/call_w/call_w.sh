#!/usr/bin/env bash
# Call W (docs/PERFORMANCE.md "Call W"), run ON the GPU machine from the repo root. Here first:
# `bash tests/gpu/prepare_ab.sh 80cda5d exp/no-v30-v31-kernel exp/no-v30-kernel main`
# (a = A0, b = R2, c = R, bin = A); carry .gpu/ab.tar.xz and this script as .gpu/call_w.sh.
# Bench windows of A0, R2, R, A and R + --qkv_counters, contexts 1-4096, both shapes. ~4 min.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz
# The shape packages (a fresh machine has none; bench_windows.py reads /tmp/tileinfer_models)
mkdir -p /tmp/tileinfer_models && .gpu/bin/probe > /tmp/tileinfer_models/target.json
python3 tests/gpu/make_models.py --target_file=/tmp/tileinfer_models/target.json --out_dir=/tmp/tileinfer_models \
  --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
for d in a b c bin; do echo "$d: $(grep -E 'registers' .gpu/$d/worker_kernel_worker.ptxas.txt | tail -1)"; done
timeout 540 python3 py/tools/bench_windows.py --config=A0=.gpu/a --config=R2=.gpu/b --config=R=.gpu/c \
  --config=A=.gpu/bin --config=RQ=.gpu/c:--qkv_counters=true \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "done at ${SECONDS}s"
cp .gpu/call_w.sh "$OUT/"
cd "$OUT" && tar czf ../call_w.tgz . && rm -rf ./* && mv ../call_w.tgz .
