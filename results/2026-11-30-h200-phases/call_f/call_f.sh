#!/usr/bin/env bash
# GPU call F (docs/PERFORMANCE.md, "v22"), run ON the GPU machine from the repo root,
# carrying .gpu/ab.tar.xz from `bash tests/gpu/prepare_ab.sh main exp/merge-preload` (a =
# main, bin = v22), .gpu/ab_phase.tar.xz from call A (its bin: main's worker v20 with the
# phase marks) and this script as .gpu/call_f.sh: v22's checks, the A/B with traces at four
# contexts, phase traces of main's worker kept whole (the chunks that hold positions), then
# memcheck / synccheck / racecheck of v22 (until SAN_DEADLINE s into the call, default 565). ~5 min.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT"
tar -C .gpu -xJf .gpu/ab.tar.xz
mkdir -p .gpu/phase && tar -C .gpu/phase -xJf .gpu/ab_phase.tar.xz
export PYTHONPATH=py:.
W=/tmp/tileinfer_models; mkdir -p $W
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -30
echo "checks at ${SECONDS}s"
AB_TRACE_CONTEXTS=32,256,1024,4064 bash tests/gpu/ab_compare.sh A=.gpu/a P=.gpu/bin 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
for m in llama1b_shape smollm2_shape; do
  .gpu/phase/bin/gpu_check --package=$W/$m.tpkg --check_target=false --contexts=1 --cpu_contexts=1 --runs=0 \
    --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 --trace_out=$W/phase_$m \
    --trace_contexts=32,256,1024 2>&1 | grep -E "trace at|FAIL"
  for c in 32 256 1024; do xz -c $W/phase_${m}_$c.json > "$OUT/phase_${m}_$c.json.xz"; done
done
echo "phase traces at ${SECONDS}s"
san() { b=$1; tool=$2; pkg=$3; shift 3; t=$((${SAN_DEADLINE:-565} - SECONDS)); [ $t -gt 20 ] || { echo "== $b $tool: skipped, out of time at ${SECONDS}s"; return; }; [ $t -lt 110 ] || t=110
  echo "== $b $tool $pkg $*"; timeout $t compute-sanitizer --tool $tool --error-exitcode 9 .gpu/$b/gpu_check --package=$W/$pkg.tpkg --contexts=1,130 --cpu_contexts=130 --runs=1 --tokens=2 --sampling_checks=0 --stream_checks=false --cpu_generate_tokens=0 "$@" 2>&1 | tail -2; echo "rc=${PIPESTATUS[0]} at ${SECONDS}s"; }
{ san bin memcheck tiny_9x3; san bin synccheck tiny_9x3; san bin racecheck tiny_9x3; } 2>&1 | tee "$OUT/sanitize.txt"
echo "done at ${SECONDS}s"
cp .gpu/call_f.sh "$OUT/"
cd "$OUT" && tar czf ../call_f.tgz . && rm -rf ./* && mv ../call_f.tgz .
