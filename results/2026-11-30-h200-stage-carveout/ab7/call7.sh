#!/usr/bin/env bash
# ab7: the L1 / shared-memory carveout, one build (main + --carveout), and main's sanitizer runs.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
tar -C .gpu -xJf .gpu/bin.tar.xz
export PYTHONPATH=py:.
W=/tmp/tileinfer_models; mkdir -p $W
.gpu/bin/probe > $W/target.json && python3 tests/gpu/make_models.py --target_file=$W/target.json --out_dir=$W --models=tiny 2>&1 | grep -v "^I" | tail -2
san() { tool=$1; shift; echo "== $tool $*"; timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/gpu_check --package=$W/tiny_9x3.tpkg --contexts=1,130 --cpu_contexts=130 --runs=1 --tokens=2 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 "$@" 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]}"; }
{ san memcheck; san racecheck; san synccheck; } 2>&1 | tee $OUT/sanitize.txt
.gpu/bin/gpu_check --package=$W/tiny_9x3.tpkg --contexts=1,17,385,600 --runs=10 --tokens=500 --carveout=0 > $OUT/gpu_check_tiny_9x3_carveout0.txt 2>&1; echo "carveout 0 tiny: rc=$? $(tail -1 $OUT/gpu_check_tiny_9x3_carveout0.txt)"
bash tests/gpu/ab_compare.sh A=.gpu/bin K0=.gpu/bin:--carveout=0 K100=.gpu/bin:--carveout=100 -- llama1b_shape 2>&1 | grep -E "round|config|FAIL|exit"
cd $OUT && tar czf ../ab7.tgz . && rm -rf ./* && mv ../ab7.tgz .
