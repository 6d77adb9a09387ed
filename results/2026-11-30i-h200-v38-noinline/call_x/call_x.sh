#!/usr/bin/env bash
# Call X (sixteenth session), ON the GPU machine from the repo root, after calls LF and NI.
# Against main:
#   b = exp/rdc: each opcode's task entry in its own translation unit (cuda/task_*.cu, -rdc and
#       a device link; shared memory through the __shared__ symbol tileinfer_dynamic_smem),
#   bin = b + docs/experiments/latency-fixes.patch (v38): its FFN, QKV, LM_HEAD and EMBED
#       objects are the same bytes as b's.
# Here first: bash tests/gpu/prepare_ab.sh main exp/rdc exp/rdc-lf; carry .gpu/ab.tar.xz and this
# script as .gpu/call_x.sh.
# 1. Bench windows, contexts 1, 256, 1024, 4096, both shapes: A, X, XL.
# 2. b and bin: tiny models GPU = CPU, 10 x 500 tokens bit-identical, each with its own probe;
#    bin: golden; memcheck and synccheck on tiny_9x3 (racecheck only for a build that lands).
# 3. One plain trace of each build at contexts 32 and 1024, both shapes.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
for d in a b bin; do echo "$d: $(grep -E 'registers' .gpu/$d/worker_kernel_worker.ptxas.txt | tail -1)"; done
timeout 240 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=X=.gpu/b --config=XL=.gpu/bin \
  --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
for d in b bin; do  # the packages match the last probe's build: each build's sanitizers right after its tiny run
  mkdir -p "$OUT/tiny_$d" && OUT=$OUT/tiny_$d BIN_DIR=.gpu/$d bash tests/gpu/device_checks.sh probe tiny 2>&1 |
    grep -E "PASS|FAIL|rror" | head -10
  echo "$d as loaded: $(grep -hE 'registers|local_bytes|workers_per_sm' "$OUT/tiny_$d"/target_probe.json | tr -d '\n ')"
  for tool in memcheck synccheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/$d/gpu_check --package=$W/tiny_9x3.tpkg \
      --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=40 --sampling_checks=0 > "$OUT/sanitize_${tool}_$d.txt" 2>&1
    echo "$tool $d rc=$? at ${SECONDS}s: $(grep -E 'ERROR SUMMARY' "$OUT/sanitize_${tool}_$d.txt" | tail -1)"
  done
done
OUT=$OUT/tiny_bin bash tests/gpu/device_checks.sh golden 2>&1 | grep -E "PASS|FAIL|rror" | head -4
echo "checks done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  for cfg in a:A b:X bin:XL; do
    d=${cfg%%:*}; n=${cfg#*:}
    .gpu/$d/gpu_check --package=$W/$m.tpkg --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
      --check_target=false --trace_out=$W/trace_${m}_$n --trace_contexts=32,1024 | grep -E "FAIL"
    for x in 32 1024; do
      python3 py/tools/trace_report.py --trace=$W/trace_${m}_${n}_$x.json --bandwidth_gbps=4400 \
        > "$OUT/trace_${m}_${n}_$x.report.txt" 2>&1
      echo "$m $n $x: $(grep -E '^token:' "$OUT/trace_${m}_${n}_$x.report.txt")"
    done
  done
done
cp .gpu/call_x.sh "$OUT/"
cd "$OUT" && tar czf ../call_x.tgz . && rm -rf ./* && mv ../call_x.tgz .
