#!/usr/bin/env bash
# ON the GPU machine: one model planned with other task counts a wave (the planner's
# --qkv_parts, --attn_out_parts, --ffn_parts, --lm_head_slots), each checked on the GPU and
# then timed against the default plan in interleaved bench windows (py/tools/bench_windows.py,
# one binary, plans differing only in the split).
#   bash tests/gpu/sweep_parts.sh MODEL CONTEXTS VARIANT...
#   e.g. bash tests/gpu/sweep_parts.sh llama1b_shape 1,1024,4096 q96:--qkv_parts=96 \
#          a64:--attn_out_parts=64 q96a64:--qkv_parts=96,--attn_out_parts=64
# MODEL: llama1b_shape | smollm2_shape (tests/gpu/make_models.py writes its checkpoint and its
# default package, the baseline "base"). VARIANT: NAME:FLAG[,FLAG...], NAME letters and
# digits (unique, not base), each FLAG a planner flag. CONTEXTS: bench windows' ends (1..4096).
# BIN_DIR (default .gpu/bin, from tests/gpu/prepare.sh); SWEEP_BLOCKS (default 3) interleaved
# blocks. Writes $OUT/sweep_parts_MODEL/: plan_NAME.txt (the planner's summary), check_NAME.txt
# (gpu_check: GPU against the CPU executor at contexts 1 and 32, within its tolerance; 3
# generations of 64 tokens bit-identical; the CPU executor is slow on the 1B, and a split does
# not depend on the context), logits_NAME.txt (the GPU's logits at contexts 1, 32 and 1024
# against base's: bit-identical required unless the variant sets --ffn_parts, whose parts
# round before their sum), bench/ (the windows' answers) and summary.txt (bench_windows'
# table of medians).
set -euo pipefail
usage="usage: sweep_parts.sh MODEL CONTEXTS NAME:FLAG[,FLAG...]..."
MODEL=${1:?$usage}
CONTEXTS=${2:?$usage}
shift 2
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
declare -A seen=()
for v in "$@"; do  # every variant checked before any work
  name=${v%%:*}
  [[ "$v" == *:?* && "$name" =~ ^[A-Za-z0-9]+$ && "$name" != base && -z "${seen[$name]:-}" ]] || {
    echo "sweep_parts: variant '$v': give NAME:FLAG[,FLAG...], NAME letters and digits, unique, not base" >&2; exit 2; }
  seen[$name]=1
done
B=${BIN_DIR:-.gpu/bin}
OUT=${OUT:-/tmp/gpu_out}
W=/tmp/tileinfer_models
R="$OUT/sweep_parts_$MODEL"
export PYTHONPATH=py:.
[ -d "$B" ] || [ ! -f .gpu/bin.tar.xz ] || tar -C .gpu -xJf .gpu/bin.tar.xz  # a packed carry
[ -x "$B/gpu_check" ] || { echo "sweep_parts: no $B/gpu_check; run tests/gpu/prepare.sh here and carry it" >&2; exit 2; }
mkdir -p "$R" "$W"
"$B/probe" > "$W/target.json"
python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models="$MODEL" 2>&1 | grep -v "^I" || true
logits() {  # PACKAGE FILE: the GPU's logits at contexts 1, 32, 1024
  "$B/gpu_check" --package="$1" --contexts=1,32,1024 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
    --stream_checks=false --cpu_generate_tokens=0 --logits_out="$2" > "$2.log" 2>&1 || { tail -5 "$2.log"; return 1; }
}
logits "$W/$MODEL.tpkg" "$W/logits_${MODEL}_base.bin"
configs=(--config="base=$B")
for v in "$@"; do
  name=${v%%:*}
  IFS=, read -r -a flags <<< "${v#*:}"
  pkg="$W/parts_$name/$MODEL.tpkg"
  mkdir -p "$W/parts_$name"
  python3 py/planner/main.py --checkpoint="$W/$MODEL" --target="$W/target.json" \
    --out="$pkg" --max_context=4096 "${flags[@]}" > "$R/plan_$name.txt" 2>&1 \
    || { tail -5 "$R/plan_$name.txt"; exit 1; }
  grep -E "^(plan|tasks a wave):" "$R/plan_$name.txt" | sed "s/^/$name /"
  "$B/gpu_check" --package="$pkg" --contexts=1,32 --cpu_contexts=1,32 --runs=3 --tokens=64 \
    --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 > "$R/check_$name.txt" 2>&1 \
    || { tail -5 "$R/check_$name.txt"; echo "sweep_parts: $name fails gpu_check" >&2; exit 1; }
  echo "$name: $(tail -1 "$R/check_$name.txt")"
  logits "$pkg" "$W/logits_${MODEL}_$name.bin"
  if cmp -s "$W/logits_${MODEL}_base.bin" "$W/logits_${MODEL}_$name.bin"; then
    echo "$name: GPU logits at 1, 32, 1024 bit-identical to base's" | tee "$R/logits_$name.txt"
  elif [[ ",${v#*:}" == *,--ffn_parts=* ]]; then
    echo "$name: GPU logits differ from base's in their bits (expected: other FFN parts)" | tee "$R/logits_$name.txt"
  else
    echo "$name: FAIL, GPU logits differ from base's though only rows moved" | tee "$R/logits_$name.txt"
    exit 1
  fi
  configs+=(--config="$name=$B" --config_packages="$name=$W/parts_$name")
done
python3 py/tools/bench_windows.py "${configs[@]}" --models="$MODEL" --contexts="$CONTEXTS" \
  --blocks="${SWEEP_BLOCKS:-3}" --out_dir="$R/bench" | tee "$R/summary.txt"
