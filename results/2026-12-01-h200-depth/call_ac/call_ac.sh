#!/usr/bin/env bash
# Call AC (docs/PERFORMANCE.md "The attention chunk count, swept"), ON the GPU machine from
# the repo root, a fresh start. Here first: .gpu/ds.tar.xz (call DS's archive: its bin is
# exp/depth-r12, whose device and host code are main v46's) and this script copied to
# .gpu/call_ac.sh. One binary, several plans of the same checkpoints: the chunks per K/V head
# (planner --attention_chunks) vary, the worker's code does not. ~6 minutes.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ds.tar.xz
plan() {  # MODEL CHUNKS: $W/MODEL_cCHUNKS.tpkg
  python3 py/planner/main.py --checkpoint="$W/$1" --target="$W/target.json" --out="$W/${1}_c$2.tpkg" \
    --max_context=4096 --attention_chunks="$2" 2>&1 | grep "^plan:"
}
for c in 11 8; do plan llama1b_shape $c; done
for c in 22 16 11; do plan smollm2_shape $c; done
echo "planned at ${SECONDS}s"
timeout 450 python3 py/tools/bench_windows.py --config=A=.gpu/bin \
  --models=llama1b_shape,llama1b_shape_c11,llama1b_shape_c8,smollm2_shape,smollm2_shape_c22,smollm2_shape_c16,smollm2_shape_c11 \
  --contexts=1,256,1024,2048,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_end call_ac .gpu/call_ac.sh
