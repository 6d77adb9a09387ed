#!/usr/bin/env bash
# ON the GPU machine: one model planned with several attention splits, each traced at several
# contexts, so that the plan's attention parameters are chosen by measurement.
#   bash tests/gpu/sweep_attention.sh MODEL SPLITS CONTEXTS [BIN_DIR]
#   e.g. bash tests/gpu/sweep_attention.sh llama1b_shape 32,64,128,256 256,1024,4064
#        bash tests/gpu/sweep_attention.sh llama1b_shape 32,32/8,32/32 1024,4064
# MODEL: llama1b_shape | smollm2_shape (tests/gpu/make_models.py writes its checkpoint).
# SPLITS: the planner's --attention_min_chunk (positions; the default is py/planner/plan.py
# default_attention_min_chunk), each optionally with /C, its --attention_chunks (chunks per
# K/V head; the default is py/planner/plan.py make_plan's: min(workers // kv_heads,
# ceil(max_context / 192))).
# CONTEXTS: traced contexts, each in 2..4088 (gpu_check --trace_contexts).
# BIN_DIR: a build from tests/gpu/prepare.sh (default .gpu/bin); a phase-trace build adds the
# per-phase medians to each report. Writes $OUT/sweep_MODEL.txt (one line per split and
# context: traced ms/token, the token's span and its attention share) and
# $OUT/sweep_MODEL/report_mcN[_cC]_CONTEXT.txt (py/tools/trace_report.py). Every package is planned for
# the probed target of BIN_DIR's build, so gpu_check checks it as usual.
set -euo pipefail
MODEL=${1:?usage: sweep_attention.sh MODEL SPLITS CONTEXTS [BIN_DIR]}
SPLITS=${2:?usage: sweep_attention.sh MODEL SPLITS CONTEXTS [BIN_DIR]}
CONTEXTS=${3:?usage: sweep_attention.sh MODEL SPLITS CONTEXTS [BIN_DIR]}
B=${4:-.gpu/bin}
OUT=${OUT:-/tmp/gpu_out}
W=/tmp/tileinfer_models
export PYTHONPATH=py:.
[ -x "$B/gpu_check" ] || { echo "sweep_attention: no $B/gpu_check; run tests/gpu/prepare.sh here and carry it" >&2; exit 2; }
mkdir -p "$OUT/sweep_$MODEL" "$W"
"$B/probe" > "$W/target.json"
python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models="$MODEL" 2>&1 | grep -v "^I" || true
best=$(bash tests/gpu/floor_once.sh "$B" "$W/floor.json")  # once per machine start: later sweeps reuse it
summary="$OUT/sweep_$MODEL.txt"
echo "model $MODEL, build $B, floor best ${best} GB/s" | tee "$summary"
for split in ${SPLITS//,/ }; do
  mc=${split%%/*}; flags=(--attention_min_chunk="$mc"); tag=mc$mc; label="min_chunk $mc"
  case "$split" in */*) flags+=(--attention_chunks="${split#*/}"); tag+=_c${split#*/}; label+=" chunks ${split#*/}" ;; esac
  pkg="$W/${MODEL}_$tag.tpkg"
  python3 py/planner/main.py --checkpoint="$W/$MODEL" --target="$W/target.json" --out="$pkg" \
    --max_context=4096 "${flags[@]}" > "$W/plan_${MODEL}_$tag.log" 2>&1 \
    || { tail -5 "$W/plan_${MODEL}_$tag.log"; exit 1; }
  grep "^plan:" "$W/plan_${MODEL}_$tag.log" | tee -a "$summary"
  "$B/gpu_check" --package="$pkg" --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
    --stream_checks=false --cpu_generate_tokens=0 --trace_out="$W/sweep_${MODEL}_$tag" \
    --trace_contexts="$CONTEXTS" > "$W/sweep_${MODEL}_$tag.log" 2>&1 \
    || { tail -5 "$W/sweep_${MODEL}_$tag.log"; exit 1; }
  for c in ${CONTEXTS//,/ }; do
    report="$OUT/sweep_$MODEL/report_${tag}_$c.txt"
    python3 py/tools/trace_report.py --trace="$W/sweep_${MODEL}_${tag}_$c.json" --bandwidth_gbps="$best" > "$report"
    ms=$(grep -o "trace at context $c: .*" "$W/sweep_${MODEL}_$tag.log" | grep -o "([0-9.]* ms/token" | tr -d '(')
    echo "$label context $c: $ms in that generation; $(grep '^token:' "$report")" | tee -a "$summary"
  done
done
