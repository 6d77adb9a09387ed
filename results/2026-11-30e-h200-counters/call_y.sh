#!/usr/bin/env bash
# Call Y (docs/PERFORMANCE.md "v32"), run ON the GPU machine from the repo root. Here first:
# `bash tests/gpu/prepare_ab.sh main exp/tiles-noinline exp/attn-noinline` (a = main 82f5e78,
# b = T, bin = N); carry .gpu/ab.tar.xz and this script as .gpu/call_y.sh. ~4 min.
# 1. The tiny models GPU = CPU and 10 x 500 tokens bit-identical for N and T, also with every
#    step's ATTENTION in tiles (device_checks' tiny and tiles stages, BIN_DIR).
# 2. Bench windows of A = main, T and N at contexts 1, 256, 1024 and 4096, both shapes.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz
for d in a b bin; do echo "$d: $(grep -E 'registers' .gpu/$d/worker_kernel_worker.ptxas.txt | tail -1)"; done
for side in N:.gpu/bin T:.gpu/b; do  # the tiny models, also with every step in tiles
  n=${side%%:*}; mkdir -p "$OUT/$n"
  OUT=$OUT/$n BIN_DIR=${side#*:} bash tests/gpu/device_checks.sh info probe tiny tiles > "$OUT/$n/checks.txt" 2>&1
  echo "$n checks rc=$?: $(grep -c 'gpu_check: PASS' "$OUT/$n/checks.txt") PASS, $(grep -c FAIL "$OUT/$n/checks.txt") FAIL"
done
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
timeout 420 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=T=.gpu/b --config=N=.gpu/bin \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "done at ${SECONDS}s"
cd "$OUT" && tar czf ../call_y.tgz . && rm -rf ./* && mv ../call_y.tgz .
