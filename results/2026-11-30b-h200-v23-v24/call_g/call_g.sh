#!/usr/bin/env bash
# Planned GPU call G (docs/PERFORMANCE.md, "v23", "v24"), run ON the GPU machine from the repo root.
# Here first: `bash tests/gpu/prepare_ab.sh main exp/norm-after exp/attn-warp-merge` (a = main, v22;
# b = v23; bin = v24; rebase both branches onto main first if main moved), then carry .gpu/ab.tar.xz
# and this script as .gpu/call_g.sh. ~7 min: the tiny checks of b and bin, the A/B of the three with
# traces at four contexts, memcheck / synccheck / racecheck of b and bin.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT"
tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
W=/tmp/tileinfer_models; mkdir -p $W
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -30
for m in tiny_9x3 tiny_untied tiny_ties tiny_9x3_mc72 tiny_untied_mc40; do  # the same checks for b
  .gpu/b/gpu_check --package=$W/$m.tpkg --check_target=false --contexts=1,2,17,100,383,384,385,600 --runs=10 \
    --tokens=500 > "$OUT/gpu_check_b_$m.txt" 2>&1; echo "b $m: $(grep -E 'PASS|FAIL' "$OUT/gpu_check_b_$m.txt" | tail -1)"
done
echo "checks at ${SECONDS}s"
AB_TRACE_CONTEXTS=32,256,1024,4064 bash tests/gpu/ab_compare.sh A=.gpu/a N=.gpu/b W=.gpu/bin 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
san() { CALL_SECONDS=$SECONDS bash tests/gpu/sanitize_one.sh "$@"; }
{ for b in bin b; do san $b memcheck tiny_9x3; san $b synccheck tiny_9x3; done; san bin racecheck tiny_9x3; san b racecheck tiny_9x3; } 2>&1 | tee "$OUT/sanitize.txt"
echo "done at ${SECONDS}s"
cp .gpu/call_g.sh "$OUT/"
cd "$OUT" && tar czf ../call_g.tgz . && rm -rf ./* && mv ../call_g.tgz .
