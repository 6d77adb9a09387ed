#!/usr/bin/env bash
# ab10: v4's staging out of the device code (b = exp/no-stage), and on it: one-chunk merge (c),
# row pairs in FFN + QKV (d), row pairs everywhere (e), row pairs everywhere + one-chunk (bin);
# a = main.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
W=/tmp/tileinfer_models; mkdir -p $W
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -20
bash tests/gpu/ab_compare.sh A=.gpu/a R=.gpu/b RO=.gpu/c RP=.gpu/d RPA=.gpu/e RPAO=.gpu/bin 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
for b in b c d e; do for m in tiny_9x3 tiny_untied tiny_ties; do
  f=$OUT/gpu_check_${b}_$m.txt
  .gpu/$b/gpu_check --package=$W/$m.tpkg --check_target=false --contexts=1,2,17,100,383,384,385,600 --runs=10 --tokens=500 > $f 2>&1
  echo "$b $m: rc=$? $(tail -1 $f)"
done; done
san() { b=$1; tool=$2; shift 2; t=$((560 - SECONDS)); [ $t -gt 20 ] || { echo "== $b $tool: skipped, out of time at ${SECONDS}s"; return; }; [ $t -lt 110 ] || t=110
  echo "== $b $tool $*"; timeout $t compute-sanitizer --tool $tool --error-exitcode 9 .gpu/$b/gpu_check --package=$W/tiny_9x3.tpkg --check_target=false --contexts=1,130 --cpu_contexts=130 --runs=1 --tokens=2 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 "$@" 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]} at ${SECONDS}s"; }
{ san bin memcheck; san bin synccheck; san b memcheck; san b synccheck; san bin racecheck; san e memcheck; san b racecheck; } 2>&1 | tee $OUT/sanitize.txt
echo "done at ${SECONDS}s"
cp .gpu/call10.sh $OUT/
cd $OUT && tar czf ../ab10.tgz . && rm -rf ./* && mv ../ab10.tgz .
