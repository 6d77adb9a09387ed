#!/usr/bin/env bash
# The showcase (issue 5), ON the GPU machine, one model per call (each fits a 10-minute call):
#   bash tests/gpu/showcase.sh MODEL        MODEL: llama1b_shape | smollm2_shape
# Needs .gpu/bin from tests/gpu/prepare.sh (bench, probe, floor, gpu_check). Writes to $OUT:
# floor.json; MODEL/results.{json,md}, MODEL/latency.png (py/tools/showcase.py: TileInfer,
# torch.compile + CUDA graph, plain CUDA graph, HF eager; interleaved blocks; medians; 95% CI
# of the paired differences); MODEL/trace_{32,4064}.json.gz with report_*.txt and
# timeline_*.png (py/tools/trace_report.py). Copy $OUT to results/DATE-h200-showcase/.
set -euo pipefail
MODEL=${1:?usage: showcase.sh llama1b_shape|smollm2_shape}
OUT=${OUT:-/tmp/gpu_out}
B=.gpu/bin
W=/tmp/tileinfer_models
mkdir -p "$OUT/$MODEL" "$W"
export PYTHONPATH=py:.
export PYTHONUNBUFFERED=1
$B/probe > "$W/target.json"
[ -s "$OUT/floor.json" ] || $B/floor > "$OUT/floor.json"
python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=$MODEL 2>&1 | grep -v "^I" || true
python3 py/tools/showcase.py --bench=$B/bench --package="$W/$MODEL.tpkg" --checkpoint="$W/$MODEL" \
  --floor_json="$OUT/floor.json" --out_dir="$OUT/$MODEL" ${SHOWCASE_FLAGS:-}
$B/gpu_check --package="$W/$MODEL.tpkg" --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
  --trace_out="$W/trace_$MODEL" --trace_contexts=32,4064 | grep -E "trace|FAIL"
best=$(python3 -c "import json; print(json.load(open('$OUT/floor.json'))['best_gbps'])")
for c in 32 4064; do
  gzip -c "$W/trace_${MODEL}_$c.json" > "$OUT/$MODEL/trace_$c.json.gz"
  python3 py/tools/trace_report.py --trace="$W/trace_${MODEL}_$c.json" --bandwidth_gbps="$best" \
    --png="$OUT/$MODEL/timeline_$c.png" > "$OUT/$MODEL/report_$c.txt"
  tail -1 "$OUT/$MODEL/report_$c.txt"
done
