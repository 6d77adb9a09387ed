#!/usr/bin/env bash
# Call SC5 (docs/PERFORMANCE.md "Call SC5"), ON the GPU machine from the repo root, a fresh start.
# Here first: `PREPARE_BAZEL_FLAGS=--define=phase_trace=1 bash tests/gpu/prepare_ab.sh 900beee fc5636c`,
# renamed .gpu/ab_phase.tar.xz (a = main before v33, bin = v33, both phase-trace builds); carry it
# and this script as .gpu/call_sc5.sh. ~3 min.
# Phase traces of both at contexts 32 and 1024, both shapes: where v33's first ATTENTION phase
# went (the owner's rope+append, the other tasks' query RoPE).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab_phase.tar.xz
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
echo "models at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  for cfg in a:A bin:S; do
    d=${cfg%%:*}; n=${cfg#*:}
    .gpu/$d/gpu_check --package=$W/$m.tpkg --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
      --check_target=false --trace_out=$W/phase_${m}_$n --trace_contexts=32,1024 | grep -E "PASS|FAIL"
    for ctx in 32 1024; do
      python3 py/tools/trace_report.py --trace=$W/phase_${m}_${n}_$ctx.json --bandwidth_gbps=4400 \
        > "$OUT/phase_${m}_${n}_$ctx.report.txt" 2>&1
      echo "== $m $n $ctx"; grep -E "^ATTENTION|^ATTN_OUT" "$OUT/phase_${m}_${n}_$ctx.report.txt"
    done
  done
done
echo "done at ${SECONDS}s"
cp .gpu/call_sc5.sh "$OUT/"
cd "$OUT" && tar czf ../call_sc5.tgz . && rm -rf ./* && mv ../call_sc5.tgz .
