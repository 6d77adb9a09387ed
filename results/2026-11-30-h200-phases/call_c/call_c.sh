#!/usr/bin/env bash
# GPU call C (docs/PERFORMANCE.md, "v21"), run ON the GPU machine from the repo root,
# carrying .gpu/ab.tar.xz from `bash tests/gpu/prepare_ab.sh main exp/attention-skip`
# (a = main with v20 and the 32-position default chunk, bin = v21) and this script as
# .gpu/call_c.sh: v21's checks (the tiny models incl. the 72- and 40-position chunk plans),
# the A/B with traces at four contexts, memcheck / synccheck / racecheck of v21. ~5 min.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT"
tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
W=/tmp/tileinfer_models; mkdir -p $W
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -30
echo "checks at ${SECONDS}s"
AB_TRACE_CONTEXTS=32,256,1024,4064 bash tests/gpu/ab_compare.sh A=.gpu/a S=.gpu/bin 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
san() { b=$1; tool=$2; pkg=$3; shift 3; t=$((565 - SECONDS)); [ $t -gt 20 ] || { echo "== $b $tool: skipped, out of time at ${SECONDS}s"; return; }; [ $t -lt 110 ] || t=110
  echo "== $b $tool $pkg $*"; timeout $t compute-sanitizer --tool $tool --error-exitcode 9 .gpu/$b/gpu_check --package=$W/$pkg.tpkg --contexts=1,130 --cpu_contexts=130 --runs=1 --tokens=2 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 "$@" 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]} at ${SECONDS}s"; }
{ for p in tiny_9x3 tiny_9x3_mc72; do san bin memcheck $p; san bin synccheck $p; done; san bin racecheck tiny_9x3_mc72; } 2>&1 | tee "$OUT/sanitize.txt"
echo "done at ${SECONDS}s"
cp .gpu/call_c.sh "$OUT/"
cd "$OUT" && tar czf ../call_c.tgz . && rm -rf ./* && mv ../call_c.tgz .
