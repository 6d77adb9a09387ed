#!/usr/bin/env bash
# Planned GPU call B (docs/PERFORMANCE.md, "Next: see inside the tasks"), right after call A
# on the same machine (.gpu/phase unpacked there; else it unpacks the carried archive): the
# phase traces and the attention split, merge-pairs' phase build (and main's at the default
# split). ~6.5 min. Carry this script as .gpu/call_b.sh.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT"
[ -x .gpu/phase/bin/gpu_check ] || { mkdir -p .gpu/phase && tar -C .gpu/phase -xJf .gpu/ab_phase.tar.xz; }
export PYTHONPATH=py:.
timeout 240 bash tests/gpu/sweep_attention.sh llama1b_shape 16,32,64,128,256 32,256,1024,4064 .gpu/phase/bin
echo "1B sweep at ${SECONDS}s"
OUT=$OUT/main timeout 80 bash tests/gpu/sweep_attention.sh llama1b_shape 128 32,256,1024,4064 .gpu/phase/a
echo "main at ${SECONDS}s"
timeout $((570 - SECONDS)) bash tests/gpu/sweep_attention.sh smollm2_shape 16,32,64,128,256 32,256,1024,4064 .gpu/phase/bin
echo "done at ${SECONDS}s"
cp .gpu/call_b.sh "$OUT/"
cd "$OUT" && tar czf ../call_b.tgz . && rm -rf ./* && mv ../call_b.tgz .
