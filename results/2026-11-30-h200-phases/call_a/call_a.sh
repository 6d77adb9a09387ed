#!/usr/bin/env bash
# Planned GPU call A (docs/PERFORMANCE.md, "Next: see inside the tasks"), run ON the GPU
# machine from the repo root, carrying .gpu/ab_plain.tar.xz and .gpu/ab_phase.tar.xz built
# here (the plan's two prepare_ab.sh lines; a = main, bin = exp/merge-pairs) and this script
# as .gpu/call_a.sh: the pipeline model, merge-pairs against main, merge-pairs' checks. ~6 min.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT"
tar -C .gpu -xJf .gpu/ab_plain.tar.xz
mkdir -p .gpu/phase && tar -C .gpu/phase -xJf .gpu/ab_phase.tar.xz
export PYTHONPATH=py:.
W=/tmp/tileinfer_models; mkdir -p $W
timeout 120 .gpu/a/floor --mode=pipeline > "$OUT/pipeline.json" 2>&1; echo "pipeline rc=$? at ${SECONDS}s"
cat "$OUT/pipeline.json"
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -20
echo "checks at ${SECONDS}s"
bash tests/gpu/ab_compare.sh A=.gpu/a M=.gpu/bin 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
san() { b=$1; tool=$2; shift 2; t=$((565 - SECONDS)); [ $t -gt 20 ] || { echo "== $b $tool: skipped, out of time at ${SECONDS}s"; return; }; [ $t -lt 110 ] || t=110
  echo "== $b $tool $*"; timeout $t compute-sanitizer --tool $tool --error-exitcode 9 .gpu/$b/gpu_check --package=$W/tiny_9x3.tpkg --contexts=1,130 --cpu_contexts=130 --runs=1 --tokens=2 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 "$@" 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]} at ${SECONDS}s"; }
{ san bin memcheck; san bin synccheck; san bin racecheck; } 2>&1 | tee "$OUT/sanitize.txt"
echo "done at ${SECONDS}s"
cp .gpu/call_a.sh "$OUT/"
cd "$OUT" && tar czf ../call_a.tgz . && rm -rf ./* && mv ../call_a.tgz .
