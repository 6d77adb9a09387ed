#!/usr/bin/env bash
# Call SP (docs/PERFORMANCE.md "Task counts a wave as planner flags"), ON the GPU machine from
# the repo root, one call (~6-8 min): the task-count sweep of both shapes with main's build.
# Here first: bash tests/gpu/prepare.sh; cp docs/experiments/next/call_sp.sh .gpu/; carry
# .gpu/bin.tar.xz and .gpu/call_sp.sh; run `bash .gpu/call_sp.sh 2>&1 | tail -60`. Every line
# of both sweeps is also in call.log ($OUT/call_sp.tgz).
set -u
source tests/gpu/call_lib.sh
CALL_MODELS=smollm2_shape,llama1b_shape call_begin .gpu/bin.tar.xz
timeout 90 .gpu/bin/floor --mode=reduce --reduce_adders=96,64,48 --reps=5 > "$OUT/floor_reduce_adders.json"
echo "floor reduce rc=$? at ${SECONDS}s"
grep -E "fixed-point" "$OUT/floor_reduce_adders.json"
show() { grep -vE "^([A-Za-z0-9]+ )?plan:" || true; }  # tasks a wave, the checks and the table
bash tests/gpu/sweep_parts.sh smollm2_shape 1,1024,4096 f96:--ffn_parts=96 f64:--ffn_parts=64 \
  q60:--qkv_parts=60 a36:--attn_out_parts=36 2>&1 | show
echo "smollm2_shape sweep rc=${PIPESTATUS[0]} at ${SECONDS}s"
if [ $SECONDS -lt 330 ]; then
  bash tests/gpu/sweep_parts.sh llama1b_shape 1,1024,4096 q96:--qkv_parts=96 \
    a64:--attn_out_parts=64 l64:--lm_head_slots=64 2>&1 | show
  echo "llama1b_shape sweep rc=${PIPESTATUS[0]} at ${SECONDS}s"
else
  echo "llama1b_shape sweep skipped: ${SECONDS}s gone"
fi
call_end call_sp .gpu/call_sp.sh
