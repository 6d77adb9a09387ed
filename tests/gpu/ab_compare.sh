#!/usr/bin/env bash
# Two worker builds in one run on the GPU machine (docs/PERFORMANCE.md: same-run ratios).
#   bash tests/gpu/ab_compare.sh A_BIN_DIR B_BIN_DIR [MODELS...]   (default: llama1b_shape smollm2_shape)
# Each dir holds a gpu_check from tests/gpu/prepare.sh. Packages are planned for the probed
# target of B (the build under test); A runs them with --check_target=false. For each model
# and build, interleaved A B A B: ms/token of 5 x 256-token generations, and a trace at
# contexts 32 and 4064 (py/tools/trace_report.py) written to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/gpu_out}
A=$1; B=$2; shift 2
MODELS=${*:-llama1b_shape smollm2_shape}
W=/tmp/tileinfer_models
mkdir -p "$OUT" "$W"
export PYTHONPATH=py:.
$B/probe > "$W/target.json" || exit 1
python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=$(echo $MODELS | tr ' ' ',') 2>&1 | grep -v "^I" || true
rc=0
for m in $MODELS; do
  for round in 1 2; do
    for side in A B; do
      dir=$A; [ $side = B ] && dir=$B
      trace=(); [ $round = 1 ] && trace=(--trace_out="$W/trace_${m}_$side" --trace_contexts=32,4064)
      echo "$m $side round $round: $($dir/gpu_check --package="$W/$m.tpkg" --check_target=false --contexts=1 --cpu_contexts=1 \
        --runs=5 --tokens=256 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 "${trace[@]}" \
        | grep -E 'determinism|trace at|FAIL' | tr '\n' ' ')" || rc=1
      for c in 32 4064; do [ $round = 1 ] && gzip -c "$W/trace_${m}_${side}_$c.json" > "$OUT/trace_${m}_${side}_$c.json.gz"; done
    done
  done
done
exit $rc
