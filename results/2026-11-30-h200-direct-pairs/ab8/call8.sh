#!/usr/bin/env bash
# ab8: direct attention at short contexts (exp/direct-attention = .gpu/bin) against main (.gpu/a).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
W=/tmp/tileinfer_models
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -20
for m in tiny_9x3 tiny_untied tiny_ties; do for n in 128 256; do
  f=$OUT/direct_${m}_$n.txt
  .gpu/bin/gpu_check --package=$W/$m.tpkg --contexts=1,2,17,100,128,129,256,257,383,600 --runs=10 --tokens=500 --direct_attention=$n > $f 2>&1
  echo "direct $m N=$n: rc=$? $(tail -1 $f)"
done; done
bash tests/gpu/ab_compare.sh A=.gpu/a D0=.gpu/bin D32=.gpu/bin:--direct_attention=32 D128=.gpu/bin:--direct_attention=128 D256=.gpu/bin:--direct_attention=256 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
san() { b=$1; tool=$2; shift 2; t=$((570 - SECONDS)); [ $t -gt 20 ] || { echo "== $b $tool: skipped, out of time at ${SECONDS}s"; return; }; [ $t -lt 150 ] || t=150; echo "== $b $tool $*"; timeout $t compute-sanitizer --tool $tool --error-exitcode 9 .gpu/$b/gpu_check --package=$W/tiny_9x3.tpkg --contexts=1,130 --cpu_contexts=130 --runs=1 --tokens=2 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 "$@" 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]} at ${SECONDS}s"; }
{ san bin memcheck --direct_attention=128; san bin racecheck --direct_attention=128; san bin synccheck --direct_attention=128; } 2>&1 | tee $OUT/sanitize.txt
echo "done at ${SECONDS}s"
cp .gpu/call8.sh $OUT/
cd $OUT && tar czf ../ab8.tgz . && rm -rf ./* && mv ../ab8.tgz .
