#!/usr/bin/env bash
# Right after call_u.sh on the same warm machine (its .gpu/a, .gpu/bin and packages are still
# there; carry this script as .gpu/call_v.sh): bench windows (py/tools/bench_windows.py) of
# A0 = main before v30 and v31, A = main, M = --attention_merge (v30), Q = --qkv_counters (v31),
# MQ = both, at contexts 1-4096, three interleaved blocks, both shapes. ~4 min.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
[ -x .gpu/bin/bench ] && [ -x .gpu/a/bench ] || { echo "call_v: no .gpu/a or .gpu/bin (a fresh machine?): run call_u.sh first" >&2; exit 3; }
timeout 560 python3 py/tools/bench_windows.py --config=A0=.gpu/a --config=A=.gpu/bin \
  --config=M=.gpu/bin:--attention_merge=true --config=Q=.gpu/bin:--qkv_counters=true \
  --config=MQ=.gpu/bin:--attention_merge=true,--qkv_counters=true \
  --contexts=1,256,1024,2048,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "done at ${SECONDS}s"
cp .gpu/call_v.sh "$OUT/"
cd "$OUT" && tar czf ../call_v.tgz . && rm -rf ./* && mv ../call_v.tgz .
