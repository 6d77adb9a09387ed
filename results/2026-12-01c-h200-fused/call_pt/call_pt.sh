#!/usr/bin/env bash
# Call PT (docs/PERFORMANCE.md "Call PT"), ON the GPU machine from the repo root, a fresh start:
# .gpu/bin = main f3d2f79 built with --define=phase_trace=1 (tests/gpu/prepare.sh with
# PREPARE_BAZEL_FLAGS=--define=phase_trace=1); phase traces, no checks.
set -u
source tests/gpu/call_lib.sh
call_begin .gpu/bin.tar.xz
cat .gpu/bin/bazel_flags.txt
call_trace .gpu/bin PT llama1b_shape 32,4064
call_trace .gpu/bin PT smollm2_shape 32,4064
for f in "$OUT"/trace_*_PT_*.report.txt; do echo "== $f"; sed -n '/phases inside tasks/,$p' "$f"; done
call_end call_pt .gpu/call_pt.sh
