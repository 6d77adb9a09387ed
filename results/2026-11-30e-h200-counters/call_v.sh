#!/usr/bin/env bash
# Call V as run (inline, on the machine call U had just left warm; .gpu/a and .gpu/bin from
# call U's ab.tar.xz): bench windows of A0 = 80cda5d (main before v30 and v31), A = main
# 14a11c4, Q = main --qkv_counters (v31), M = main --attention_merge (v30). The fetched files
# stopped at 8 (a count limit on $OUT): the table in call_v/bench_windows.txt is the script's
# own output; llama1b_shape A0 / A / M(1,2) rows are in call_v/bench.
export OUT PYTHONPATH=py:.; timeout 400 python3 py/tools/bench_windows.py --config=A0=.gpu/a --config=A=.gpu/bin --config=Q=.gpu/bin:--qkv_counters=true --config=M=.gpu/bin:--attention_merge=true --contexts=1,256,1024,4096 --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"; echo done at $SECONDS
