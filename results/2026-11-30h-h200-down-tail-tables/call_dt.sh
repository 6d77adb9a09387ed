#!/usr/bin/env bash
# The next session's first GPU call (docs/PERFORMANCE.md "v35", "v36"), ON the GPU machine from the
# repo root. Here first (a clone of main has no exp/ branches; make them from the patches):
#   for n in down-tail down-tail16 operand-tables; do
#     git branch exp/$n main && git worktree add /tmp/$n exp/$n &&
#       (cd /tmp/$n && git apply docs/experiments/$n.patch && git commit -qam "$n (docs/experiments/$n.patch)")
#   done
#   bash tests/gpu/prepare_ab.sh main exp/down-tail exp/down-tail16 exp/operand-tables
# (a = main, b = v35 with kRows 8, c = v35 with kRows 16, bin = v36); carry .gpu/ab.tar.xz and this
# script as .gpu/call_dt.sh. ~8 min.
# 1. Bench windows, contexts 1, 256, 1024, 4096, both shapes: A, T8, T16, V (v36) and V0 (v36's
#    binary with --cache_tables=false: the same code layout, so V against V0 is v36 alone).
# 2. v36 (bin) and v35 (b): tiny models GPU = CPU with 10 x 500 tokens bit-identical; bin also with the
#    tables off and with the tables on but the records not cached (the tables then start at
#    work_bytes); bin: golden, memcheck and synccheck on tiny_9x3 (racecheck takes ~190 s: a second
#    call, as call SC2 did).
# 3. One plain trace of each build at context 32 (per wave spans and task medians).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
for d in a b c bin; do echo "$d: $(grep -E 'registers' .gpu/$d/worker_kernel_worker.ptxas.txt | tail -1)"; done
timeout 330 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=T8=.gpu/b --config=T16=.gpu/c \
  --config=V=.gpu/bin --config=V0=.gpu/bin:--cache_tables=false \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
bash tests/gpu/device_checks.sh tiny golden 2>&1 | grep -E "===|PASS|FAIL|rror" | head -20
mkdir -p "$OUT/tiny_b" && OUT=$OUT/tiny_b BIN_DIR=.gpu/b bash tests/gpu/device_checks.sh tiny 2>&1 | grep -E "PASS|FAIL|rror" | head -10
for f in --cache_tables=false --cache_records=false; do
  mkdir -p "$OUT/tiny${f//[-=]/_}" && OUT=$OUT/tiny${f//[-=]/_} GPU_CHECK_FLAGS=$f bash tests/gpu/device_checks.sh tiny 2>&1 |
    grep -E "PASS|FAIL|rror" | head -10
done
echo "checks done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  for cfg in a:A b:T8 c:T16 bin:V; do
    d=${cfg%%:*}; n=${cfg#*:}
    .gpu/$d/gpu_check --package=$W/$m.tpkg --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
      --check_target=false --trace_out=$W/trace_${m}_$n --trace_contexts=32 | grep -E "FAIL"
    python3 py/tools/trace_report.py --trace=$W/trace_${m}_${n}_32.json --bandwidth_gbps=4400 \
      > "$OUT/trace_${m}_${n}_32.report.txt" 2>&1
    echo "$m $n: $(grep -E '^FFN ' "$OUT/trace_${m}_${n}_32.report.txt")"
  done
done
for tool in memcheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/gpu_check --package=$W/tiny_9x3.tpkg \
    --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=40 --sampling_checks=0 > "$OUT/sanitize_$tool.txt" 2>&1
  echo "$tool rc=$? at ${SECONDS}s: $(tail -1 "$OUT/sanitize_$tool.txt")"
done
cp .gpu/call_dt.sh "$OUT/"
cd "$OUT" && tar czf ../call_dt.tgz . && rm -rf ./* && mv ../call_dt.tgz .
