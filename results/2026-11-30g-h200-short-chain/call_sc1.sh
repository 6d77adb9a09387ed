#!/usr/bin/env bash
# Call SC1 (docs/PERFORMANCE.md "v33" / "v34"), run ON the GPU machine from the repo root. Here first:
# `bash tests/gpu/prepare_ab.sh main exp/short-chain exp/preload-ffn exp/preload`
# (a = main, b = v33, c = v33 + v34's FFN half, bin = v33 + v34); carry .gpu/ab.tar.xz and
# this script as .gpu/call_sc1.sh. ~9 min.
# 1. Bench windows of the four builds, contexts 1, 256, 1024, 4096, both shapes (the decision).
# 2. The build with every change (bin): tiny models GPU = CPU with 10 x 500 tokens
#    bit-identical, golden packages, then memcheck / racecheck / synccheck of gpu_check on
#    tiny_9x3 (contexts 1, 3, 130).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
for d in a b c bin; do echo "$d: $(grep -E 'registers' .gpu/$d/worker_kernel_worker.ptxas.txt | tail -1)"; done
timeout 330 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=S=.gpu/b --config=SF=.gpu/c \
  --config=SFQ=.gpu/bin --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
bash tests/gpu/device_checks.sh tiny golden 2>&1 | grep -E "===|PASS|FAIL|rror" | head -60
echo "checks done at ${SECONDS}s"
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/gpu_check --package=$W/tiny_9x3.tpkg \
    --contexts=1,3,130 --cpu_contexts=3 --runs=1 --tokens=70 --sampling_checks=0 > "$OUT/sanitize_$tool.txt" 2>&1
  echo "$tool rc=$? at ${SECONDS}s: $(tail -1 "$OUT/sanitize_$tool.txt")"
done
cp .gpu/call_sc1.sh "$OUT/"
cd "$OUT" && tar czf ../call_sc1.tgz . && rm -rf ./* && mv ../call_sc1.tgz .
