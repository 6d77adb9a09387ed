#!/usr/bin/env bash
# Call TM (docs/PERFORMANCE.md "Call TM: ATTENTION position by position for head_dim above 64"),
# ON the GPU machine from the repo root, main's build (~5 min):
#   bash .gpu/call_tm.sh
# Here first: bash tests/gpu/prepare.sh; cp docs/experiments/next/call_tm.sh .gpu/; carry
# .gpu/bin.tar.xz and .gpu/call_tm.sh. Every line is also in call.log ($OUT/call_tm.tgz).
set -u
NT=--attention_tile_min=1000000  # no step of these models reaches it: ATTENTION without tiles
source tests/gpu/call_lib.sh
CALL_MODELS=tiny_hd80_g6,tiny_hd128_g3,tiny_hd128_g4,llama3b_shape call_begin .gpu/bin.tar.xz
for m in tiny_hd80_g6 tiny_hd128_g3 tiny_hd128_g4; do
  f="$OUT/gpu_check_${m}_nt.txt"
  timeout 60 .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1,2,17,100,383,384,385,600 --runs=10 --tokens=500 \
    $NT > "$f" 2>&1
  echo "$m tiles off: rc=$? $(grep -c FAIL "$f") FAIL lines; $(tail -1 "$f")"
done
CALL_SECONDS=$SECONDS SAN_DEADLINE=200 bash tests/gpu/sanitize_one.sh bin memcheck tiny_hd128_g4 $NT
m=llama3b_shape
timeout 90 .gpu/bin/gpu_check --package="$W/$m.tpkg" --contexts=1,1024,4096 --cpu_contexts=1 --runs=1 --tokens=64 \
  --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 $NT --logits_out="$W/$m.nt.logits" \
  --tokens_out="$W/$m.nt.tokens" > "$OUT/gpu_check_${m}_nt.txt" 2>&1
echo "$m gpu_check tiles off rc=$? at ${SECONDS}s"; grep -E "context|PASS|FAIL" "$OUT/gpu_check_${m}_nt.txt" | head -6
timeout 120 python3 py/tools/hf_compare.py --checkpoint="$W/$m" --logits="$W/$m.nt.logits" --tokens="$W/$m.nt.tokens" \
  --json_out="$OUT/hf_compare_${m}_nt.json" > "$OUT/hf_compare_${m}_nt.txt" 2>&1
echo "$m hf_compare tiles off rc=$? at ${SECONDS}s"; grep -E "^context|^greedy" "$OUT/hf_compare_${m}_nt.txt"
timeout $((440 - SECONDS)) python3 py/tools/bench_windows.py --config=t65=.gpu/bin:--attention_tile_min=65 \
  --config=nt=.gpu/bin:$NT --models=$m --contexts=256,1024,4096 --blocks=3 --out_dir="$OUT/bench" | tee "$OUT/summary.txt"
echo "bench rc=${PIPESTATUS[0]} at ${SECONDS}s"
call_end call_tm .gpu/call_tm.sh
