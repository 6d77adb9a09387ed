#!/usr/bin/env bash
# ab12: a = main (v17); b = exp/attention-batch-long; c = exp/ffn-down-groups;
# d = exp/counter-barrier; bin = exp/combo (all three merged). Barrier benchmark first.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
W=/tmp/tileinfer_models; mkdir -p $W
timeout 60 .gpu/a/floor --mode=barrier > $OUT/barrier.json 2>&1; echo "barrier rc=$? at ${SECONDS}s"; head -c 3000 $OUT/barrier.json; echo
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -20
echo "checks at ${SECONDS}s"
bash tests/gpu/ab_compare.sh A=.gpu/a L=.gpu/b F=.gpu/c C=.gpu/d:--counter_barrier X0=.gpu/bin X=.gpu/bin:--counter_barrier 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
for cfg in "d --counter_barrier" "bin --counter_barrier" "b" "c"; do set -- $cfg; b=$1; shift
  for m in tiny_9x3 tiny_untied tiny_ties; do
  f=$OUT/gpu_check_${b}${1:+_cb}_$m.txt
  .gpu/$b/gpu_check --package=$W/$m.tpkg --check_target=false --contexts=1,2,17,100,383,384,385,600 --runs=10 --tokens=500 "$@" > $f 2>&1
  echo "$b $* $m: rc=$? $(tail -1 $f)"
done; done
echo "tiny at ${SECONDS}s"
san() { b=$1; tool=$2; shift 2; t=$((565 - SECONDS)); [ $t -gt 20 ] || { echo "== $b $tool: skipped, out of time at ${SECONDS}s"; return; }; [ $t -lt 110 ] || t=110
  echo "== $b $tool $*"; timeout $t compute-sanitizer --tool $tool --error-exitcode 9 .gpu/$b/gpu_check --package=$W/tiny_9x3.tpkg --check_target=false --contexts=1,130 --cpu_contexts=130 --runs=1 --tokens=2 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 "$@" 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]} at ${SECONDS}s"; }
{ san bin memcheck --counter_barrier; san bin synccheck --counter_barrier; san bin memcheck; san bin racecheck --counter_barrier; san d racecheck --counter_barrier; } 2>&1 | tee $OUT/sanitize.txt
echo "done at ${SECONDS}s"
cp .gpu/call12.sh $OUT/
cd $OUT && tar czf ../ab12.tgz . && rm -rf ./* && mv ../ab12.tgz .
