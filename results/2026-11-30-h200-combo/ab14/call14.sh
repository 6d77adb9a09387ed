#!/usr/bin/env bash
# ab14, a separately started machine: a = main before (v17, fa0941e), bin = main after (v19 = L of ab12).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
rm -rf .gpu/a .gpu/bin; tar -C .gpu -xJf .gpu/ab14.tar.xz
timeout 200 bash tests/gpu/ab_compare.sh A=.gpu/a L=.gpu/bin 2>&1 | grep -E "round|config|FAIL|exit"
echo "done at ${SECONDS}s"
cp .gpu/call14.sh $OUT/; cd $OUT && tar czf ../ab14.tgz . && rm -rf ./* && mv ../ab14.tgz .
