#!/usr/bin/env bash
# Call SP (docs/PERFORMANCE.md "Task counts a wave as planner flags"), ON the GPU machine from
# the repo root: the task-count sweep of one shape with main's build, one call a shape.
#   bash .gpu/call_sp.sh smollm2_shape   (~5 min: also floor --mode=reduce --reduce_adders)
#   bash .gpu/call_sp.sh llama1b_shape   (~7 min: the 1B's checkpoint, plans and CPU checks are slow)
# Here first: bash tests/gpu/prepare.sh; cp docs/experiments/next/call_sp.sh .gpu/; carry
# .gpu/bin.tar.xz and .gpu/call_sp.sh; run `bash .gpu/call_sp.sh MODEL 2>&1 | tail -60`.
# Every line is also in call.log ($OUT/call_sp_MODEL.tgz).
set -u
MODEL=${1:?usage: call_sp.sh smollm2_shape|llama1b_shape}
source tests/gpu/call_lib.sh
CALL_MODELS=$MODEL call_begin .gpu/bin.tar.xz
show() { grep -vE "^([A-Za-z0-9]+ )?plan:" || true; }  # tasks a wave, the checks and the table
case "$MODEL" in
  smollm2_shape)
    timeout 90 .gpu/bin/floor --mode=reduce --reduce_adders=96,64,48 --reps=5 > "$OUT/floor_reduce_adders.json"
    echo "floor reduce rc=$? at ${SECONDS}s"
    grep -E "fixed-point" "$OUT/floor_reduce_adders.json"
    # The reduce kernel's new adders condition under memcheck (a short run; cut at 60 s).
    timeout 60 compute-sanitizer --tool memcheck .gpu/bin/floor --mode=reduce --reduce_adders=64 --reps=1 \
      > "$OUT/floor_reduce_memcheck.txt" 2>&1
    echo "floor reduce memcheck rc=$?: $(grep -E 'ERROR SUMMARY' "$OUT/floor_reduce_memcheck.txt" | tail -1)"
    variants=(f96:--ffn_parts=96 w96:--workers=96,--ffn_parts=96 f64:--ffn_parts=64 q60:--qkv_parts=60
              a36:--attn_out_parts=36) ;;
  llama1b_shape)
    variants=(q96:--qkv_parts=96 a64:--attn_out_parts=64 l64:--lm_head_slots=64) ;;
  *) echo "call_sp: unknown model $MODEL" >&2; exit 2 ;;
esac
timeout $((570 - SECONDS)) bash tests/gpu/sweep_parts.sh "$MODEL" 1,1024,4096 "${variants[@]}" 2>&1 | show
echo "$MODEL sweep rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end "call_sp_$MODEL" .gpu/call_sp.sh
