#!/usr/bin/env bash
# Worker builds and settings compared in one run on the GPU machine (docs/PERFORMANCE.md:
# same-run ratios).
#   bash tests/gpu/ab_compare.sh CONFIG... [-- MODEL...]   (default models: llama1b_shape smollm2_shape)
#   CONFIG: NAME=BIN_DIR or NAME=BIN_DIR:FLAG,FLAG,... (gpu_check flags, e.g.
#           B=.gpu/bin:--l2_rows_ahead=1,--l2_waves_ahead=1), or just BIN_DIR (named A, B, ...)
# Each dir holds a gpu_check from tests/gpu/prepare.sh (or prepare_ab.sh). Packages are
# planned for the probed target of the last config's build; every config runs them with
# --check_target=false. For each model, two rounds over the configs in order (A B C A B C):
# ms/token of 5 x 256-token generations; round 1 also traces contexts 32 and 4064, or those
# in AB_TRACE_CONTEXTS (e.g. 32,256,1024,4064; py/tools/trace_report.py), written to $OUT.
# Lines also go to $OUT/ab_compare.txt as they come.
set -uo pipefail
OUT=${OUT:-/tmp/gpu_out}
names=(); dirs=(); flags=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  c=$1; shift
  letters=(A B C D E F G H I J K L); name=${letters[${#names[@]}]}
  case "$c" in *=*) name=${c%%=*}; c=${c#*=} ;; esac
  names+=("$name"); dirs+=("${c%%:*}"); f=""; case "$c" in *:*) f=${c#*:} ;; esac; flags+=("$f")
done
[ "${1:-}" = "--" ] && shift
MODELS=${*:-llama1b_shape smollm2_shape}
TRACE_CONTEXTS=${AB_TRACE_CONTEXTS:-32,4064}
[ ${#names[@]} -ge 1 ] || { echo "usage: ab_compare.sh CONFIG... [-- MODEL...]" >&2; exit 2; }
W=/tmp/tileinfer_models
mkdir -p "$OUT" "$W"
export PYTHONPATH=py:.
last=$((${#names[@]} - 1))
"${dirs[$last]}"/probe > "$W/target.json" || exit 1
python3 tests/gpu/make_models.py --target_file="$W/target.json" --out_dir="$W" --models=$(echo $MODELS | tr ' ' ',') 2>&1 | grep -v "^I" || true
for k in "${!names[@]}"; do echo "config ${names[$k]}: ${dirs[$k]} ${flags[$k]}" | tee -a "$OUT/ab_compare.txt"; done
rc=0
for m in $MODELS; do
  for round in 1 2; do
    for k in "${!names[@]}"; do
      side=${names[$k]}
      extra=(); [ -n "${flags[$k]}" ] && IFS=, read -r -a extra <<< "${flags[$k]}"
      trace=(); [ $round = 1 ] && trace=(--trace_out="$W/trace_${m}_$side" --trace_contexts=$TRACE_CONTEXTS)
      log=$("${dirs[$k]}"/gpu_check --package="$W/$m.tpkg" --check_target=false --contexts=1 --cpu_contexts=1 \
        --runs=5 --tokens=256 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 "${trace[@]}" "${extra[@]}" 2>&1)
      r=$?
      line=$(grep -E 'determinism|trace at|FAIL' <<< "$log" | sed -E 's|/tmp/tileinfer_models/[^ ]*||' | tr '\n' ' ')
      [ $r = 0 ] || { rc=1; line="$line [exit $r: $(tail -2 <<< "$log" | tr '\n' ' ')]"; }
      echo "$m $side round $round: $line" | tee -a "$OUT/ab_compare.txt"
      for c in ${TRACE_CONTEXTS//,/ }; do [ $round = 1 ] && xz -c "$W/trace_${m}_${side}_$c.json" > "$OUT/trace_${m}_${side}_$c.json.xz"; done
    done
  done
done
exit $rc
