#!/usr/bin/env bash
# The next session's first GPU call (docs/PERFORMANCE.md "v40"), ON the GPU machine from the repo
# root. Here first (a clone of main has no exp/ branch; make it from the patch):
#   git branch exp/stage-wo main && git worktree add /tmp/stage-wo exp/stage-wo &&
#     (cd /tmp/stage-wo && git apply docs/experiments/stage-wo.patch && git add -A && git commit -qm "v40")
#   bash tests/gpu/prepare_ab.sh main exp/stage-wo
# (a = main, bin = v40); carry .gpu/ab.tar.xz and this script as .gpu/call_sw.sh. ~8.5 min.
# 1. Bench windows, contexts 1, 256, 1024, 4096, both shapes: A (main) and v40's binary three
#    ways: S0 (--stage_attn_out=false --stage_qkv=false: the code without copies), S (Wo rows
#    only: --stage_qkv=false), SQ (the default: Wo and QKV rows).
# 2. bin: tiny models GPU = CPU with 10 x 500 tokens bit-identical (its own probe; both stages
#    on: gpu_check's line says "B of it the weight stage for ATTN_OUT QKV"), golden; memcheck
#    and synccheck on tiny_9x3. Racecheck (~230 s) in a second call if v40 is to land.
# 3. One plain trace of each at contexts 32 and 1024, both shapes (JSON kept, xz, for
#    py/tools/trace_compare.py).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
for d in a bin; do echo "$d: $(grep -E 'registers' .gpu/$d/worker_kernel_worker.ptxas.txt | tail -1)"; done
timeout 300 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=S0=.gpu/bin:--stage_attn_out=false,--stage_qkv=false \
  --config=S=.gpu/bin:--stage_qkv=false --config=SQ=.gpu/bin --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 |
  grep -v "^I1"
echo "bench done at ${SECONDS}s"
mkdir -p "$OUT/tiny_bin" && OUT=$OUT/tiny_bin bash tests/gpu/device_checks.sh probe tiny golden 2>&1 |
  grep -E "PASS|FAIL|rror|weight stage" | head -16
echo "checks done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  for cfg in a:A: bin:S0:--stage_attn_out=false,--stage_qkv=false bin:S:--stage_qkv=false bin:SQ:; do
    IFS=: read -r d n flags <<< "$cfg"
    .gpu/$d/gpu_check --package=$W/$m.tpkg --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
      --check_target=false ${flags//,/ } --trace_out=$W/trace_${m}_$n --trace_contexts=32,1024 | grep -E "FAIL|on GPU"
    for x in 32 1024; do
      xz -c "$W/trace_${m}_${n}_$x.json" > "$OUT/trace_${m}_${n}_$x.json.xz"
      python3 py/tools/trace_report.py --trace=$W/trace_${m}_${n}_$x.json --bandwidth_gbps=4400 \
        > "$OUT/trace_${m}_${n}_$x.report.txt" 2>&1
      echo "$m $n $x: $(awk '/^(QKV|ATTENTION|ATTN_OUT|FFN|FFN_REDUCE) /{printf "%s %s  ", $1, $NF}' "$OUT/trace_${m}_${n}_$x.report.txt")$(grep -oE '^token: [0-9.]+ us' "$OUT/trace_${m}_${n}_$x.report.txt")"
    done
  done
done
for tool in memcheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/gpu_check --package=$W/tiny_9x3.tpkg \
    --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=40 --sampling_checks=0 > "$OUT/sanitize_$tool.txt" 2>&1
  echo "$tool rc=$? at ${SECONDS}s: $(grep -E 'ERROR SUMMARY' "$OUT/sanitize_$tool.txt" | tail -1)"
done
cp .gpu/call_sw.sh "$OUT/"
cd "$OUT" && tar czf ../call_sw.tgz . && rm -rf ./* && mv ../call_sw.tgz .
