#!/usr/bin/env bash
# GPU call K (docs/PERFORMANCE.md, "v26"), run ON the GPU machine from the repo root.
# Here first: `bash tests/gpu/prepare_ab.sh d4a8ebe exp/lanes-wm 2ecfe80` (a = main before v26,
# b = LW (v25c + v24: docs/experiments/attn-lanes.patch) for Nsight Compute, bin = v26 with the
# prefetch off by default), then carry .gpu/ab.tar.xz and this script as .gpu/call_k.sh.
# ~8 min: bin's tiny checks (prefetch off, then on) and golden packages; the A/B of main (W),
# v26 off (P0), D = 2 (P2) and D = 1+2 (P12) with traces at 32 and 1024; bin's sanitizers with
# the prefetch on; then, while time is left, ncu stall reasons of W and LW at context 1024.
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT"
tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -30
mkdir -p "$OUT/tiny_prefetch12"
OUT=$OUT/tiny_prefetch12 GPU_CHECK_FLAGS=--l2_prefetch_ahead=1+2 bash tests/gpu/device_checks.sh tiny 2>&1 |
  grep -E "PASS|FAIL|error" | head -20
echo "checks at ${SECONDS}s"
AB_TRACE_CONTEXTS=32,1024 bash tests/gpu/ab_compare.sh W=.gpu/a P0=.gpu/bin P2=.gpu/bin:--l2_prefetch_ahead=2 \
  P12=.gpu/bin:--l2_prefetch_ahead=1+2 2>&1 | grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
san() { CALL_SECONDS=$SECONDS SAN_DEADLINE=420 bash tests/gpu/sanitize_one.sh "$@"; }
{ san bin memcheck tiny_9x3 --l2_prefetch_ahead=1+2; san bin memcheck tiny_hd80_g6 --l2_prefetch_ahead=1+2
  san bin synccheck tiny_9x3 --l2_prefetch_ahead=1+2; san bin racecheck tiny_9x3 --l2_prefetch_ahead=1+2; } 2>&1 |
  tee "$OUT/sanitize.txt"
# Nsight Compute on one 16-step window launch at context 1024 (bench: 16 launches fill the K/V
# rows first; the 18th worker launch is the second window), W then LW.
ncu_one() {  # NAME BUILD
  [ $SECONDS -lt 470 ] || { echo "ncu $1: skipped at ${SECONDS}s"; return; }
  printf "context 1024 3\nquit\n" | timeout 90 ncu --clock-control none --kernel-name regex:WorkerKernel \
    --launch-skip 17 --launch-count 1 --section WarpStateStats --section SourceCounters --section SpeedOfLight \
    -f -o "$OUT/ncu_$1" ".gpu/$2/bench" --package=/tmp/tileinfer_models/llama1b_shape.tpkg --check_target=false \
    > "$OUT/ncu_$1.log" 2>&1
  echo "ncu $1: rc=$? at ${SECONDS}s: $(tail -2 "$OUT/ncu_$1.log" | tr '\n' ' ' | cut -c1-300)"
  ncu -i "$OUT/ncu_$1.ncu-rep" --page raw --csv > "$OUT/ncu_$1_raw.csv" 2>&1
  ncu -i "$OUT/ncu_$1.ncu-rep" --page details --csv > "$OUT/ncu_$1_details.csv" 2>&1
  ncu -i "$OUT/ncu_$1.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_$1_sass.csv" 2>&1
  xz -f "$OUT/ncu_$1_sass.csv"; rm -f "$OUT/ncu_$1.ncu-rep"
}
ncu_one W a
ncu_one LW b
echo "done at ${SECONDS}s"
cp .gpu/call_k.sh "$OUT/"
cd "$OUT" && tar czf ../call_k.tgz . && rm -rf ./* && mv ../call_k.tgz .
