#!/usr/bin/env bash
# Call AC2 (docs/PERFORMANCE.md "Call AC2"), ON the GPU machine from the repo root, a fresh
# start. Here first: .gpu/ds.tar.xz (its bin: main v46's code) and this script copied to
# .gpu/call_ac2.sh. One binary, plans with longer minimum chunks (planner
# --attention_min_chunk) and chunk counts. ~5 minutes.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ds.tar.xz
plan() {  # MODEL MIN_CHUNK CHUNKS: $W/MODEL_mcMIN_CHUNK_cCHUNKS.tpkg
  python3 py/planner/main.py --checkpoint="$W/$1" --target="$W/target.json" --out="$W/${1}_mc$2_c$3.tpkg" \
    --max_context=4096 --attention_min_chunk="$2" --attention_chunks="$3" 2>&1 | grep "^plan:"
}
plan llama1b_shape 128 16; plan llama1b_shape 96 16
plan smollm2_shape 128 22; plan smollm2_shape 96 22; plan smollm2_shape 128 16
echo "planned at ${SECONDS}s"
timeout 480 python3 py/tools/bench_windows.py --config=A=.gpu/bin \
  --models=llama1b_shape,llama1b_shape_mc128_c16,llama1b_shape_mc96_c16,smollm2_shape,smollm2_shape_mc128_c22,smollm2_shape_mc96_c22,smollm2_shape_mc128_c16 \
  --contexts=1,256,512,1024,2048,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_end call_ac2 .gpu/call_ac2.sh
