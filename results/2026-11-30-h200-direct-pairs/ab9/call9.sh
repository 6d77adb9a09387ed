#!/usr/bin/env bash
# ab9: the floor's gemv and bulk_ring modes (main's floor, .gpu/a); three chain cuts:
# b = exp/attn-out-one-chunk, c = exp/pair-ffn, d = exp/pair-rows against a = main.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
[ -d .gpu/d ] || tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
W=/tmp/tileinfer_models; mkdir -p $W
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
timeout 90 .gpu/a/floor --mode=gemv > $OUT/gemv.json 2>&1; echo "gemv rc=$? at ${SECONDS}s"
timeout 60 .gpu/a/floor --mode=bulk_ring > $OUT/bulk_ring.json 2>&1; echo "bulk_ring rc=$? at ${SECONDS}s"
cat $OUT/gemv.json $OUT/bulk_ring.json | head -60
bash tests/gpu/ab_compare.sh A=.gpu/a O=.gpu/b F=.gpu/c P=.gpu/d 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
.gpu/bin/probe > $W/target.json && python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=tiny 2>&1 | grep -v "^I" | tail -1
for b in b c d; do for m in tiny_9x3 tiny_untied tiny_ties; do
  f=$OUT/gpu_check_${b}_$m.txt
  .gpu/$b/gpu_check --package=$W/$m.tpkg --check_target=false --contexts=1,2,17,100,383,384,385,600 --runs=10 --tokens=500 > $f 2>&1
  echo "$b $m: rc=$? $(tail -1 $f)"
done; done
san() { b=$1; tool=$2; shift 2; t=$((570 - SECONDS)); [ $t -gt 20 ] || { echo "== $b $tool: skipped, out of time at ${SECONDS}s"; return; }; [ $t -lt 100 ] || t=100
  echo "== $b $tool $*"; timeout $t compute-sanitizer --tool $tool --error-exitcode 9 .gpu/$b/gpu_check --package=$W/tiny_9x3.tpkg --check_target=false --contexts=1,130 --cpu_contexts=130 --runs=1 --tokens=2 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 "$@" 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]} at ${SECONDS}s"; }
{ san d memcheck; san d racecheck; san b memcheck; san b racecheck; san d synccheck; san b synccheck; san c memcheck; san c racecheck; } 2>&1 | tee $OUT/sanitize.txt
echo "done at ${SECONDS}s"
cp .gpu/call9.sh $OUT/
cd $OUT && tar czf ../ab9.tgz . && rm -rf ./* && mv ../ab9.tgz .
