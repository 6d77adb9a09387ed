#!/usr/bin/env bash
# ab11 (short: the session's last ~270 s of device time): attention positions in batches
# (exp/attention-batch = .gpu/bin) against main (.gpu/a).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
W=/tmp/tileinfer_models; mkdir -p $W
.gpu/bin/probe > $W/target.json && python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=tiny 2>&1 | grep -v "^I" | tail -1
for m in tiny_9x3 tiny_ties; do .gpu/bin/gpu_check --package=$W/$m.tpkg --contexts=1,17,100,383,384,385,600 --runs=5 --tokens=500 > $OUT/gpu_check_$m.txt 2>&1; echo "$m: rc=$? $(tail -1 $OUT/gpu_check_$m.txt) at ${SECONDS}s"; done
timeout 170 bash tests/gpu/ab_compare.sh A=.gpu/a B=.gpu/bin 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
[ $SECONDS -lt 200 ] && timeout 15 compute-sanitizer --tool memcheck --error-exitcode 9 .gpu/bin/gpu_check --package=$W/tiny_9x3.tpkg --contexts=1,130 --cpu_contexts=130 --runs=1 --tokens=2 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 2>&1 | tail -2 | tee $OUT/sanitize.txt; echo "memcheck rc=${PIPESTATUS[0]} at ${SECONDS}s" | tee -a $OUT/sanitize.txt
cp .gpu/call11.sh $OUT/
cd $OUT && tar czf ../ab11.tgz . && rm -rf ./* && mv ../ab11.tgz .
