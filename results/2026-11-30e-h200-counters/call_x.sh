#!/usr/bin/env bash
# Call X: main after v30 and v31 left it, on the GPU (run ON the GPU machine from the repo
# root). Here first: `bash tests/gpu/prepare.sh` (.gpu/bin.tar.xz = main) and .gpu/a0.tar.xz
# (a/bench of `prepare_ab.sh 80cda5d ...`); carry both and this script as .gpu/call_x.sh.
# 1. main's checks: the six tiny models GPU = CPU, 10 x 500 tokens bit-identical, golden.
# 2. Bench windows of A0 (80cda5d) and main at contexts 1, 1024 and 4096, both shapes.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/bin.tar.xz && tar -C .gpu -xJf .gpu/a0.tar.xz
bash tests/gpu/device_checks.sh info probe tiny golden > "$OUT/checks.txt" 2>&1
echo "main checks rc=$? at ${SECONDS}s: $(grep -c 'gpu_check: PASS' "$OUT/checks.txt") PASS, $(grep -c FAIL "$OUT/checks.txt") FAIL"
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
timeout 400 python3 py/tools/bench_windows.py --config=A0=.gpu/a --config=main=.gpu/bin \
  --contexts=1,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "done at ${SECONDS}s"
cp .gpu/call_x.sh "$OUT/"
cd "$OUT" && tar czf ../call_x.tgz . && rm -rf ./* && mv ../call_x.tgz .
