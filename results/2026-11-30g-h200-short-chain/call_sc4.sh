#!/usr/bin/env bash
# Call SC4, ON the GPU machine from the repo root: the checks of the landed worker itself (v33 =
# exp/short-chain fc5636c, call SC2's .gpu/ab.tar.xz bin; call SC1 checked v33 + v34): tiny
# models GPU = CPU with 10 x 500 tokens bit-identical, golden packages, memcheck and synccheck.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
export PYTHONPATH=py:.
tar -C .gpu -xJf .gpu/ab.tar.xz && rm -rf .gpu/a .gpu/b .gpu/c
bash tests/gpu/device_checks.sh info probe tiny golden > "$OUT/checks.txt" 2>&1
echo "checks rc=$? at ${SECONDS}s: $(grep -c 'gpu_check: PASS' "$OUT/checks.txt") PASS, $(grep -c FAIL "$OUT/checks.txt") FAIL"
grep -E "registers|spill" "$OUT/checks.txt" | head -2
for tool in memcheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/gpu_check --package=/tmp/tileinfer_models/tiny_9x3.tpkg \
    --contexts=1,3,130 --cpu_contexts=3 --runs=1 --tokens=70 --sampling_checks=0 > "$OUT/sanitize_$tool.txt" 2>&1
  echo "$tool rc=$? at ${SECONDS}s: $(tail -1 "$OUT/sanitize_$tool.txt")"
done
cp .gpu/call_sc4.sh "$OUT/"
cd "$OUT" && tar czf ../call_sc4.tgz . && rm -rf ./* && mv ../call_sc4.tgz .
