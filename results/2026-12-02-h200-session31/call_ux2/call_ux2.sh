#!/usr/bin/env bash
# Call UX2 (docs/PERFORMANCE.md "Call UX measured"), ON the GPU machine from the repo root: call
# UX's build again with call_checks mended (its `| head -20` had ended device_checks.sh early,
# leaving tiny_hd128_g3, tiny_hd128_g4, tiny_h2304 and the golden stage unrun since call HK).
# Here first: bash tests/gpu/prepare.sh; cp this to .gpu/; carry .gpu/bin.tar.xz and it.
set -u
export CALL_MODELS=smollm2_shape
source tests/gpu/call_lib.sh
call_begin .gpu/bin.tar.xz
call_checks
grep -hE "^gpu_check: (PASS|FAIL)|determinism" "$OUT"/tiny_bin/gpu_check_tiny_h2304.txt "$OUT"/tiny_bin/gpu_check_tiny_hd128_g*.txt
grep -E "PASS|FAIL" "$OUT/tiny_bin/gpu_golden_test.txt"
call_end call_ux2 .gpu/call_ux2.sh
