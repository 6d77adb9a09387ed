#!/usr/bin/env bash
# The showcase harness, ON the GPU machine, one model per call (each fits a 10-minute call):
#   bash tests/gpu/showcase.sh MODEL        MODEL: llama1b_shape | smollm2_shape | llama3b_shape | llama8b_shape
# Needs .gpu/bin from tests/gpu/prepare.sh (bench, probe, floor, gpu_check). Writes to $OUT:
# floor.json; MODEL/results.{json,md}, MODEL/latency.png (py/tools/showcase.py: TileInfer,
# torch.compile + CUDA graph, plain CUDA graph, HF eager; interleaved blocks; medians; 95% CI
# of the paired differences), MODEL/bandwidth.png (the floor against active SMs);
# MODEL/trace_{32,4064}.json.xz with report_*.txt, timeline_*.png and balance_*.png (bytes per
# worker per wave; py/tools/trace_report.py). Copy $OUT to results/DATE-GPU-showcase/.
#   bash tests/gpu/showcase.sh build_llamacpp   builds llama-bench (CUDA, sm_90, static ggml,
#     ~5.5 min) from .gpu/llamacpp_src.tgz (tests/gpu/prepare_llamacpp.sh) into /tmp/llamacpp
#     and packs it as $OUT/llamacpp_bin.part_a? (42 MB in three parts): copy those to .gpu/
#     here and carry them, so that later calls (same machine image) skip the build. With
#     llama-bench there, showcase calls add llama.cpp (BF16 GGUF from py/tools/gguf_export.py,
#     which needs .gpu/wheels/gguf-*.whl carried too).
set -euo pipefail
MODEL=${1:?usage: showcase.sh llama1b_shape|smollm2_shape|llama3b_shape|llama8b_shape|build_llamacpp}
OUT=${OUT:-/tmp/gpu_out}
B=.gpu/bin
[ -d $B ] || [ ! -f .gpu/bin.tar.xz ] || tar -C .gpu -xJf .gpu/bin.tar.xz  # a packed carry
W=/tmp/tileinfer_models
L=/tmp/llamacpp
export PYTHONPATH=py:.
export PYTHONUNBUFFERED=1
if [ "$MODEL" = build_llamacpp ]; then
  mkdir -p $L && tar -C $L -xzf .gpu/llamacpp_src.tgz
  cmake -S $L/llama.cpp -B $L/build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF \
    -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF -DCMAKE_BUILD_TYPE=Release > $L/cmake.log 2>&1
  cmake --build $L/build --target llama-bench -j"${LLAMACPP_JOBS:-$(nproc)}" > $L/build.log 2>&1 \
    || { tail -20 $L/build.log; exit 1; }
  mkdir -p "$OUT" && strip $L/build/bin/llama-bench
  tar -C $L/build -cJf $L/llamacpp_bin.tar.xz bin/llama-bench
  split -b 15000000 $L/llamacpp_bin.tar.xz "$OUT/llamacpp_bin.part_"  # files come back <= 16 MiB
  ldd $L/build/bin/llama-bench | grep -E "cublas|cudart|not found" || true
  ls -la $L/build/bin/llama-bench "$OUT"/llamacpp_bin.part_*
  exit 0
fi
[ -x $L/build/bin/llama-bench ] || [ ! -f .gpu/llamacpp_bin.part_aa ] \
  || { mkdir -p $L/build && cat .gpu/llamacpp_bin.part_a? | tar -C $L/build -xJ; }  # a carried build
mkdir -p "$OUT/$MODEL" "$W"
$B/probe > "$W/target.json"
best=$(bash tests/gpu/floor_once.sh $B "$OUT/floor.json")
python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=$MODEL 2>&1 | grep -v "^I" || true
llamacpp=()
if [ -x $L/build/bin/llama-bench ]; then
  ls .gpu/wheels/gguf-*.whl >/dev/null && python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/wheels/*.whl
  [ -s "$W/$MODEL.gguf" ] || PYTHONPATH=py:.:/tmp/site python3 py/tools/gguf_export.py --checkpoint="$W/$MODEL" --gguf_out="$W/$MODEL.gguf"
  llamacpp=(--runtimes=tileinfer,torch_compile,llamacpp,torch_graph,hf_eager --llama_bench=$L/build/bin/llama-bench
            --llamacpp_gguf="$W/$MODEL.gguf")
fi
# The trace first (short), so that a showcase cut by the call's limit still leaves it. SHOWCASE_TRACE=0 skips it.
# A failing trace step is reported and the showcase goes on: the traces explain the results, they
# are not the results (call BIG4a's 8B showcase ended after its traces, with no table). Its GPU =
# CPU check at context 1 takes the model's tolerance: with gpu_check's default 2e-3 the 8B's
# 2.77e-3 failed it, which ended the step before its traces were copied (calls BIG4a, BIG5).
traces() {
  $B/gpu_check --package="$W/$MODEL.tpkg" --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
    --tolerance="$(bash tests/gpu/gpu_check_tolerance.sh "$MODEL")" \
    --trace_out="$W/trace_$MODEL" --trace_contexts=32,4064 | grep -E "trace|FAIL"
  for c in 32 4064; do
    xz -c "$W/trace_${MODEL}_$c.json" > "$OUT/$MODEL/trace_$c.json.xz"
    python3 py/tools/trace_report.py --trace="$W/trace_${MODEL}_$c.json" --bandwidth_gbps="$best" \
      --png="$OUT/$MODEL/timeline_$c.png" --balance_png="$OUT/$MODEL/balance_$c.png" > "$OUT/$MODEL/report_$c.txt"
    tail -1 "$OUT/$MODEL/report_$c.txt"
  done
}
if [ "${SHOWCASE_TRACE:-1}" != 0 ]; then
  set +e  # a subshell on the left of || would run with errexit off
  (set -euo pipefail; traces)
  rc=$?
  set -e
  [ $rc = 0 ] || echo "showcase: the trace step failed (exit $rc; its output is above); going on without it" >&2
fi
python3 py/tools/showcase.py --bench=$B/bench --package="$W/$MODEL.tpkg" --checkpoint="$W/$MODEL" \
  --floor_json="$OUT/floor.json" --out_dir="$OUT/$MODEL" "${llamacpp[@]}" ${SHOWCASE_FLAGS:-}
