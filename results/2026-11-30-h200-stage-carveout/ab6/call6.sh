#!/usr/bin/env bash
# ab6: main (records) vs task-start staging. Run from the repo root on the GPU machine.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
W=/tmp/tileinfer_models
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill" | head -20
for m in tiny_9x3 tiny_untied tiny_ties; do for f in "--stage_bytes=98304" "--stage_bytes=98304 --stage_bulk=false" "--stage_bytes=64"; do
  echo "== $m $f"; .gpu/bin/gpu_check --package=$W/$m.tpkg --contexts=1,2,17,100,383,384,385,600 --runs=10 --tokens=500 $f > $OUT/stage_${m}_$(echo $f | tr -dc 'a-z0-9').txt 2>&1; echo "rc=$? $(tail -1 $OUT/stage_${m}_$(echo $f | tr -dc 'a-z0-9').txt)"
done; done
san() { b=$1; tool=$2; shift 2; echo "== $b $tool $*"; timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/$b/gpu_check --package=$W/tiny_9x3.tpkg --contexts=1,130 --cpu_contexts=130 --runs=1 --tokens=2 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 "$@" 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]}"; }
{ san a memcheck; san a racecheck
  san bin memcheck --stage_bytes=98304; san bin racecheck --stage_bytes=98304; san bin synccheck --stage_bytes=98304
  san bin memcheck --stage_bytes=98304 --stage_bulk=false; san bin racecheck --stage_bytes=98304 --stage_bulk=false; } 2>&1 | tee $OUT/sanitize.txt
bash tests/gpu/ab_compare.sh A=.gpu/a S0=.gpu/bin S96=.gpu/bin:--stage_bytes=98304 C96=.gpu/bin:--stage_bytes=98304,--stage_bulk=false S192=.gpu/bin:--stage_bytes=196608 2>&1 | grep -E "round|config|FAIL|exit"
cd $OUT && tar czf ../ab6.tgz . && rm -rf ./* && mv ../ab6.tgz .
