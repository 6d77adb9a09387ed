#!/usr/bin/env bash
# Call N (sixteenth session), ON the GPU machine from the repo root: how far does main's token
# time move when nothing but the code's schedule and placement changes? Builds:
#   m = main (fd52e58's worker, call X's a; .gpu/main_m.tar.xz),
#   a = exp/null-p1 (a never-taken __trap in the kernel's prologue),
#   b = exp/null-p3 (RunTask's cases in reverse order),
#   bin = exp/null-p4 (RunTask's cases in another order);
#   A2 = m again, a second config of the same binary (the bench's own noise).
# Here first: bash tests/gpu/prepare_ab.sh exp/null-p1 exp/null-p3 exp/null-p4; carry
# .gpu/ab.tar.xz, .gpu/main_m.tar.xz and this script as .gpu/call_n.sh.
# 1. Bench windows, contexts 1, 256, 1024, 4096, both shapes: A, P1, P3, P4, A2.
# 2. bin: tiny models GPU = CPU (its own probe).
# 3. One plain trace of each build at context 32, both shapes.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz && tar -C .gpu -xJf .gpu/main_m.tar.xz
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
for d in m a b bin; do echo "$d: $(grep -E 'registers' .gpu/$d/worker_kernel_worker.ptxas.txt | tail -1)"; done
timeout 390 python3 py/tools/bench_windows.py --config=A=.gpu/m --config=P1=.gpu/a --config=P3=.gpu/b \
  --config=P4=.gpu/bin --config=A2=.gpu/m --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  for cfg in m:A a:P1 b:P3 bin:P4; do
    d=${cfg%%:*}; n=${cfg#*:}
    .gpu/$d/gpu_check --package=$W/$m.tpkg --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
      --check_target=false --trace_out=$W/trace_${m}_$n --trace_contexts=32 | grep -E "FAIL"
    python3 py/tools/trace_report.py --trace=$W/trace_${m}_${n}_32.json --bandwidth_gbps=4400 \
      > "$OUT/trace_${m}_${n}_32.report.txt" 2>&1
    echo "$m $n: $(grep -E '^token:' "$OUT/trace_${m}_${n}_32.report.txt")"
  done
done
mkdir -p "$OUT/tiny_bin" && OUT=$OUT/tiny_bin bash tests/gpu/device_checks.sh probe tiny 2>&1 |
  grep -E "PASS|FAIL|rror" | head -10
echo "checks done at ${SECONDS}s"
cp .gpu/call_n.sh "$OUT/"
cd "$OUT" && tar czf ../call_n.tgz . && rm -rf ./* && mv ../call_n.tgz .
