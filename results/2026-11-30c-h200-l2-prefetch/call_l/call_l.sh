#!/usr/bin/env bash
# GPU call L (docs/PERFORMANCE.md, "v27"), run ON the GPU machine from the repo root.
# Here first: `bash tests/gpu/prepare_ab.sh c6c6c0e exp/gemv-noinline exp/lanes-wm exp/lanes-wm-noinline`
# (a = W, main; b = S, main + v27; c = LW, v25c + v24; bin = LWS, LW + v27), then carry
# .gpu/ab.tar.xz and this script as .gpu/call_l.sh. ~8 min: tiny checks and golden packages of
# LWS and S; the A/B of the four with traces at 32, 1024 and 4064; sanitizers of LWS and S;
# while time is left, Nsight Compute of S and LWS at context 1024 (as call K's of W and LW).
set -u
OUT=${OUT:-/tmp/gpu_out}; export OUT
mkdir -p "$OUT"
tar -C .gpu -xJf .gpu/ab.tar.xz
export PYTHONPATH=py:.
bash tests/gpu/device_checks.sh info probe tiny golden 2>&1 | grep -E "PASS|FAIL|error|registers|spill|H200" | head -30
mkdir -p "$OUT/S"
OUT=$OUT/S BIN_DIR=.gpu/b bash tests/gpu/device_checks.sh tiny golden 2>&1 | grep -E "PASS|FAIL|error" | head -20
echo "checks at ${SECONDS}s"
AB_TRACE_CONTEXTS=32,1024,4064 bash tests/gpu/ab_compare.sh W=.gpu/a S=.gpu/b LW=.gpu/c LWS=.gpu/bin 2>&1 |
  grep -E "round|config|FAIL|exit"
echo "ab done at ${SECONDS}s"
san() { CALL_SECONDS=$SECONDS SAN_DEADLINE=440 bash tests/gpu/sanitize_one.sh "$@"; }
{ san bin memcheck tiny_9x3; san bin memcheck tiny_hd80_g6; san b memcheck tiny_9x3; san bin synccheck tiny_9x3
  san b racecheck tiny_9x3; san bin racecheck tiny_9x3; } 2>&1 | tee "$OUT/sanitize.txt"
ncu_one() {  # NAME BUILD: one 16-step window launch at context 1024 (the 18th worker launch of bench)
  [ $SECONDS -lt 500 ] || { echo "ncu $1: skipped at ${SECONDS}s"; return; }
  printf "context 1024 3\nquit\n" | timeout 60 ncu --clock-control none --kernel-name regex:WorkerKernel \
    --launch-skip 17 --launch-count 1 --section WarpStateStats --section SourceCounters --section SpeedOfLight \
    -f -o "$OUT/ncu_$1" ".gpu/$2/bench" --package=/tmp/tileinfer_models/llama1b_shape.tpkg --check_target=false \
    > "$OUT/ncu_$1.log" 2>&1
  echo "ncu $1: rc=$? at ${SECONDS}s: $(tail -1 "$OUT/ncu_$1.log" | cut -c1-200)"
  ncu -i "$OUT/ncu_$1.ncu-rep" --page raw --csv > "$OUT/ncu_$1_raw.csv" 2>&1
  ncu -i "$OUT/ncu_$1.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_$1_sass.csv" 2>&1
  xz -f "$OUT/ncu_$1_sass.csv"; rm -f "$OUT/ncu_$1.ncu-rep"
}
ncu_one LWS bin
ncu_one S b
echo "done at ${SECONDS}s"
cp .gpu/call_l.sh "$OUT/"
cd "$OUT" && tar czf ../call_l.tgz . && rm -rf ./* && mv ../call_l.tgz .
