#!/usr/bin/env bash
# Call U (fifteenth session), ON the GPU machine from the repo root, after call DT: v35 with
# kRows 16 (down-tail16) won at every context; v36's tables on against off in one binary won
# 1.1-1.3% (1B) and 1.9-2.5% (SmolLM2), but that binary with the tables on only tied main: the
# runtime choice between the two reads costs what the tables save. Here, against main:
#   b = exp/down-tail16, c = b + operand-tables.patch (the runtime choice),
#   bin = b + the tables always in shared memory (after the work area; no option).
# Here first: bash tests/gpu/prepare_ab.sh main exp/down-tail16 exp/t16-tables exp/t16-tables-u;
# carry .gpu/ab.tar.xz and this script as .gpu/call_u.sh.
# 1. Bench windows, contexts 1, 256, 1024, 4096, both shapes: A, T16, TV, TU.
# 2. bin and b: tiny models GPU = CPU with 10 x 500 tokens bit-identical, each with its own
#    probe (call DT's b run was refused: its packages were made for bin's fingerprint); bin:
#    golden; memcheck, synccheck and a short racecheck (10 tokens) on tiny_9x3.
# 3. One plain trace of each build at context 32.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
for d in a b c bin; do echo "$d: $(grep -E 'registers' .gpu/$d/worker_kernel_worker.ptxas.txt | tail -1)"; done
timeout 300 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=T16=.gpu/b --config=TV=.gpu/c \
  --config=TU=.gpu/bin --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
for d in b bin; do
  mkdir -p "$OUT/tiny_$d" && OUT=$OUT/tiny_$d BIN_DIR=.gpu/$d bash tests/gpu/device_checks.sh probe tiny 2>&1 |
    grep -E "PASS|FAIL|rror" | head -10
done
OUT=$OUT/tiny_bin bash tests/gpu/device_checks.sh golden 2>&1 | grep -E "PASS|FAIL|rror" | head -4
echo "checks done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  for cfg in a:A b:T16 c:TV bin:TU; do
    d=${cfg%%:*}; n=${cfg#*:}
    .gpu/$d/gpu_check --package=$W/$m.tpkg --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
      --check_target=false --trace_out=$W/trace_${m}_$n --trace_contexts=32 | grep -E "FAIL"
    python3 py/tools/trace_report.py --trace=$W/trace_${m}_${n}_32.json --bandwidth_gbps=4400 \
      > "$OUT/trace_${m}_${n}_32.report.txt" 2>&1
    echo "$m $n: $(grep -E '^FFN ' "$OUT/trace_${m}_${n}_32.report.txt")"
  done
done
for tool in memcheck synccheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/gpu_check --package=$W/tiny_9x3.tpkg \
    --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=10 --sampling_checks=0 > "$OUT/sanitize_$tool.txt" 2>&1
  echo "$tool rc=$? at ${SECONDS}s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize_$tool.txt" | tail -1)"
done
cp .gpu/call_u.sh "$OUT/"
cd "$OUT" && tar czf ../call_u.tgz . && rm -rf ./* && mv ../call_u.tgz .
