#!/usr/bin/env bash
# Call R2 (seventeenth session): v41 against main on a second, separately started machine (calls
# EF and SC shared one start). Here first: .gpu/ae.tar.xz = call EF's a (main 79c0892) and bin
# (v41); carry it and this script as .gpu/call_r2.sh. ~2 min.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/ae.tar.xz
timeout 200 python3 py/tools/bench_windows.py --config=A=.gpu/a --config=E=.gpu/bin --contexts=1,256,1024,4096 \
  --out_dir="$OUT/bench" 2>&1 | grep -v "^I1"
echo "bench done at ${SECONDS}s"
call_end call_r2 .gpu/call_r2.sh
