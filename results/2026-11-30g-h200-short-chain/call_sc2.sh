#!/usr/bin/env bash
# Call SC2 (docs/PERFORMANCE.md "v33"), run ON the GPU machine from the repo root. Here first:
# `bash tests/gpu/prepare_ab.sh main exp/attn-rope-one exp/attn-out-batch exp/short-chain`
# (a = main, b = v33's ATTENTION half, c = v33's ATTN_OUT half, bin = v33); carry .gpu/ab.tar.xz
# and this script as .gpu/call_sc2.sh. ~8 min.
# 1. Bench windows of the four builds, contexts 1, 256, 1024, 4096, both shapes: which half
#    does what (and main against v33 again, on another machine start).
# 2. Traces (per wave span, task medians) of main and v33 at contexts 32, 256, 1024, 4064.
# 3. racecheck of v33 on tiny_9x3 (call SC1's ran out of its 100 s).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape,tiny_9x3 2>&1 | grep -v "^I"
for d in a b c bin; do echo "$d: $(grep -E 'registers' .gpu/$d/worker_kernel_worker.ptxas.txt | tail -1)"; done
timeout 300 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=R=.gpu/b --config=O=.gpu/c \
  --config=S=.gpu/bin --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  for cfg in a:A bin:S; do
    d=${cfg%%:*}; n=${cfg#*:}
    .gpu/$d/gpu_check --package=$W/$m.tpkg --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
      --check_target=false --trace_out=$W/trace_${m}_$n --trace_contexts=32,256,1024,4064 | grep -E "PASS|FAIL"
    for ctx in 32 256 1024 4064; do
      python3 py/tools/trace_report.py --trace=$W/trace_${m}_${n}_$ctx.json --bandwidth_gbps=4400 \
        > "$OUT/trace_${m}_${n}_$ctx.report.txt" 2>&1
    done
  done
done
echo "traces done at ${SECONDS}s"
grep -h "token:" "$OUT"/trace_llama1b_shape_*.report.txt
timeout 220 compute-sanitizer --tool racecheck --error-exitcode 9 .gpu/bin/gpu_check --package=$W/tiny_9x3.tpkg \
  --contexts=1,130 --cpu_contexts=1 --runs=1 --tokens=40 --sampling_checks=0 > "$OUT/sanitize_racecheck.txt" 2>&1
echo "racecheck rc=$? at ${SECONDS}s: $(tail -1 "$OUT/sanitize_racecheck.txt")"
cp .gpu/call_sc2.sh "$OUT/"
cd "$OUT" && tar czf ../call_sc2.tgz . && rm -rf ./* && mv ../call_sc2.tgz .
