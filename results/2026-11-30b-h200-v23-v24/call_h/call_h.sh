#!/usr/bin/env bash
# GPU call H (docs/PERFORMANCE.md, "v25"), run ON the GPU machine from the repo root.
# Here first: `bash tests/gpu/prepare_ab.sh main exp/attn-warp-merge exp/attn-lanes exp/lanes-wm`
# (a = main, v22; b = v24; c = v25; bin = v25 + v24), then carry .gpu/ab.tar.xz and this script as
# .gpu/call_h.sh. ~9 min: the tiny checks of bin (device_checks) and of c, the A/B of the four with
# traces at four contexts, bin's sanitizers, then the chunks-per-head sweep of bin on the 1B.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT"
tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
W=/tmp/tileinfer_models; mkdir -p $W
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -30
for m in tiny_9x3 tiny_untied tiny_ties tiny_9x3_mc72 tiny_untied_mc40 tiny_hd80_g6; do  # the same checks for c
  .gpu/c/gpu_check --package=$W/$m.tpkg --check_target=false --contexts=1,2,17,100,383,384,385,600 --runs=10 \
    --tokens=500 > "$OUT/gpu_check_c_$m.txt" 2>&1; echo "c $m: $(grep -E 'PASS|FAIL' "$OUT/gpu_check_c_$m.txt" | tail -1)"
done
echo "checks at ${SECONDS}s"
AB_TRACE_CONTEXTS=32,256,1024,4064 bash tests/gpu/ab_compare.sh A=.gpu/a W=.gpu/b L=.gpu/c LW=.gpu/bin 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
san() { CALL_SECONDS=$SECONDS SAN_DEADLINE=470 bash tests/gpu/sanitize_one.sh "$@"; }
{ san bin memcheck tiny_9x3; san bin memcheck tiny_hd80_g6; san bin synccheck tiny_9x3; san c memcheck tiny_hd80_g6;
  san bin racecheck tiny_9x3; } 2>&1 | tee "$OUT/sanitize.txt"
echo "sanitizers done at ${SECONDS}s"
left=$((575 - SECONDS))
if [ $left -gt 40 ]; then
  timeout $left bash tests/gpu/sweep_attention.sh llama1b_shape 32/8,32/4 4064,1024 .gpu/bin 2>&1 | tail -8
fi
echo "done at ${SECONDS}s"
cp .gpu/call_h.sh "$OUT/"
cd "$OUT" && tar czf ../call_h.tgz . && rm -rf ./* && mv ../call_h.tgz .
