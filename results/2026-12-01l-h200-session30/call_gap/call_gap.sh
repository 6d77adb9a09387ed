#!/usr/bin/env bash
# Call GAP (docs/PERFORMANCE.md "Call GAP"), ON the GPU machine from the repo root: main's final
# build checked (tiny models with the step-order check, golden, sanitizers, the shapes'
# generation, the bench's context order) and main's phase-trace build traced at contexts 32 and
# 4064 on both shapes, for the gap by cause of v54n (py/tools/trace_report.py, here).
# Here first: .gpu/gap.tar.xz with bin = main (tests/gpu/prepare.sh) and pt = main's phase-trace
# build (PREPARE_BAZEL_FLAGS=--define=phase_trace=1); cp this to .gpu/; carry both.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/gap.tar.xz
call_checks
echo "step order: $(cat "$OUT"/tiny_bin/gpu_check_*.txt | grep -c 'step order (skips refused, same-token windows keep later rows): ok') ok, $(cat "$OUT"/tiny_bin/gpu_check_*.txt | grep -c 'step order: FAIL') FAIL"
call_generation llama1b_shape smollm2_shape
echo "checks at ${SECONDS}s"
call_trace .gpu/pt PT llama1b_shape 32,4064
call_trace .gpu/pt PT smollm2_shape 32,4064
echo "traces at ${SECONDS}s"
timeout $((560 - SECONDS)) python3 py/tools/bench_windows.py --config=A=.gpu/bin --contexts=4096,1,1024,256 --blocks=2 \
  --reps=5 --out_dir="$OUT/bench" 2>&1 | grep -v "^I" | tail -10
echo "bench at ${SECONDS}s"
call_end call_gap .gpu/call_gap.sh
