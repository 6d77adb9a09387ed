#!/usr/bin/env bash
# Call P3D (docs/PERFORMANCE.md "P3d"), ON the GPU machine from the repo root, a fresh start:
# a = main f3d2f79 (V), b = S (exp/smem96: main with a 96 KB work area), c = P3b, bin = P3d
# (exp/fused-attn-wo-p3d; wrong output by design, timing only); then the showcase of main on
# this start (.gpu/bin replaced by main's build).
# Here first: bash tests/gpu/prepare_ab.sh f3d2f79 exp/smem96 exp/fused-attn-wo-p3b exp/fused-attn-wo-p3d
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ab.tar.xz
timeout 240 python3 py/tools/bench_windows.py --config=V=.gpu/a --config=S=.gpu/b --config=P3b=.gpu/c \
  --config=P3d=.gpu/bin --contexts=1,64,128,256,1024 --out_dir="$OUT/bench_p3d" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_trace .gpu/bin P3d llama1b_shape 32
call_trace .gpu/bin P3d smollm2_shape 32
call_trace .gpu/b S llama1b_shape 32
echo "traces done at ${SECONDS}s"
mv .gpu/bin .gpu/p3d && cp -r .gpu/a .gpu/bin
call_showcase 560
call_end call_p3d .gpu/call_p3d.sh
