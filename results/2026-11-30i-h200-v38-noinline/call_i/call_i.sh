#!/usr/bin/env bash
# Call I (sixteenth session), ON the GPU machine from the repo root: which of v38's items slows
# the FFN task that v38 does not touch (calls LF and X: +0.4-0.9 us; call N: null rebuilds move
# it by at most 0.22 us)? Traces only. Builds:
#   m = main (.gpu/main_m.tar.xz, as in call N), a = exp/v38-i2 (FFN_REDUCE's residual early),
#   b = exp/v38-i4 (ATTENTION's next position ahead), bin = exp/v38-i13 (ATTN_OUT: residual
#   early, m and l as one load).
# Here first: bash tests/gpu/prepare_ab.sh exp/v38-i2 exp/v38-i4 exp/v38-i13; carry
# .gpu/ab.tar.xz, .gpu/main_m.tar.xz and this script as .gpu/call_i.sh.
# Each build traced twice at contexts 32 and 1024, both shapes (rounds in build order).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz && tar -C .gpu -xJf .gpu/main_m.tar.xz
W=/tmp/tileinfer_models; mkdir -p $W && .gpu/bin/probe > $W/target.json
python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=llama1b_shape,smollm2_shape 2>&1 | grep -v "^I"
for round in 1 2; do
  for m in llama1b_shape smollm2_shape; do
    for cfg in m:A a:I2 b:I4 bin:I13; do
      d=${cfg%%:*}; n=${cfg#*:}
      .gpu/$d/gpu_check --package=$W/$m.tpkg --contexts=1 --cpu_contexts=1 --runs=0 --sampling_checks=0 \
        --check_target=false --trace_out=$W/trace_${m}_$n --trace_contexts=32,1024 | grep -E "FAIL"
      for x in 32 1024; do
        r="$OUT/trace_${m}_${n}_${x}_r$round.report.txt"
        python3 py/tools/trace_report.py --trace=$W/trace_${m}_${n}_$x.json --bandwidth_gbps=4400 > "$r" 2>&1
        echo "r$round $m $n $x: $(awk '/^(QKV|ATTENTION|ATTN_OUT|FFN|FFN_REDUCE) /{printf "%s %s  ", $1, $NF}' "$r")$(grep -oE '^token: [0-9.]+ us' "$r")"
      done
    done
  done
  echo "round $round done at ${SECONDS}s"
done
cp .gpu/call_i.sh "$OUT/"
cd "$OUT" && tar czf ../call_i.tgz . && rm -rf ./* && mv ../call_i.tgz .
