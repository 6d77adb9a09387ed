#!/usr/bin/env bash
# Call R (fifteenth session), ON the GPU machine from the repo root, a third machine start:
#   a = 5ecad61 (main before v35 + v36u), b = main 6c86f08 (v35 + v36u), bin = exp/reduce-batch (v37).
# Here first: bash tests/gpu/prepare_ab.sh 5ecad61 main exp/reduce-batch; carry .gpu/ab.tar.xz and
# this script as .gpu/call_r.sh.
# 1. Bench windows, contexts 1, 256, 1024, 4096, both shapes: A0, M, R (M against A0 repeats call U's
#    TU against A on another start; R against M is v37).
# 2. bin: tiny models GPU = CPU with 10 x 500 tokens bit-identical, golden; memcheck, synccheck;
#    racecheck (call U's ran out of 120 s; call SC2's took ~190 s): bin holds main's v35 + v36u code.
# 3. One plain trace of M and R at context 32.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
for d in a b bin; do echo "$d: $(grep -E 'registers' .gpu/$d/worker_kernel_worker.ptxas.txt | tail -1)"; done
timeout 240 python3 py/tools/bench_windows.py --config=A0=.gpu/a --config=M=.gpu/b --config=R=.gpu/bin \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
mkdir -p "$OUT/tiny_bin" && OUT=$OUT/tiny_bin bash tests/gpu/device_checks.sh probe tiny golden 2>&1 |
  grep -E "PASS|FAIL|rror" | head -10
echo "checks done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  for cfg in b:M bin:R; do
    d=${cfg%%:*}; n=${cfg#*:}
    .gpu/$d/gpu_check --package=$W/$m.tpkg --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
      --check_target=false --trace_out=$W/trace_${m}_$n --trace_contexts=32 | grep -E "FAIL"
    python3 py/tools/trace_report.py --trace=$W/trace_${m}_${n}_32.json --bandwidth_gbps=4400 \
      > "$OUT/trace_${m}_${n}_32.report.txt" 2>&1
    echo "$m $n: $(grep -E '^FFN_REDUCE ' "$OUT/trace_${m}_${n}_32.report.txt")"
  done
done
for tool in memcheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/gpu_check --package=$W/tiny_9x3.tpkg \
    --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=40 --sampling_checks=0 > "$OUT/sanitize_$tool.txt" 2>&1
  echo "$tool rc=$? at ${SECONDS}s: $(grep -E 'ERROR SUMMARY' "$OUT/sanitize_$tool.txt" | tail -1)"
done
timeout $((570 - SECONDS)) compute-sanitizer --tool racecheck --error-exitcode 9 .gpu/bin/gpu_check \
  --package=$W/tiny_9x3.tpkg --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=40 --sampling_checks=0 \
  > "$OUT/sanitize_racecheck.txt" 2>&1
echo "racecheck rc=$? at ${SECONDS}s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/sanitize_racecheck.txt" | tail -2)"
cp .gpu/call_r.sh "$OUT/"
cd "$OUT" && tar czf ../call_r.tgz . && rm -rf ./* && mv ../call_r.tgz .
