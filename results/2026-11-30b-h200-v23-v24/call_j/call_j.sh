#!/usr/bin/env bash
# GPU call J (docs/PERFORMANCE.md, "v25c"), run ON the GPU machine from the repo root.
# Here first: `bash tests/gpu/prepare_ab.sh exp/attn-warp-merge exp/lanes-wm` (a = v24, the
# baseline after call G; bin = v25c + v24), then carry .gpu/ab.tar.xz and this script as
# .gpu/call_j.sh. ~4 min: bin's tiny checks and golden packages (device_checks), the A/B of the
# two with traces at 32, 1024 and 4064, bin's sanitizers.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT"
tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -30
echo "checks at ${SECONDS}s"
AB_TRACE_CONTEXTS=32,1024,4064 bash tests/gpu/ab_compare.sh W=.gpu/a LW=.gpu/bin 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
san() { CALL_SECONDS=$SECONDS SAN_DEADLINE=330 bash tests/gpu/sanitize_one.sh "$@"; }
{ san bin memcheck tiny_9x3; san bin memcheck tiny_hd80_g6; san bin synccheck tiny_9x3; san bin racecheck tiny_9x3; } 2>&1 | tee "$OUT/sanitize.txt"
echo "done at ${SECONDS}s"
cp .gpu/call_j.sh "$OUT/"
cd "$OUT" && tar czf ../call_j.tgz . && rm -rf ./* && mv ../call_j.tgz .
