#!/usr/bin/env bash
# CI's short fuzz run (issue 8): builds host/package_fuzzer.cc with clang (libFuzzer, ASan,
# UBSan) and feeds it FUZZ_RUNS inputs mutated from the committed corpus. Fails on a crash, a
# sanitizer report, a hang over 1 s or 2 GB of memory (the input is kept in the test's
# undeclared outputs), and when clang is missing: ./setup.sh installs it.
set -euo pipefail
runs=${FUZZ_RUNS:-60000}
root="$TEST_SRCDIR/$TEST_WORKSPACE"
bin="$TEST_TMPDIR/package_fuzzer"
FORMAT_H="$root/cuda/plan_format.h" "$root/tests/fuzz/build_fuzzer.sh" "$bin" "$root"

# New inputs go to a scratch directory (listed first), never into the committed corpus.
mkdir -p "$TEST_TMPDIR/new"
artifacts="${TEST_UNDECLARED_OUTPUTS_DIR:-$TEST_TMPDIR}/"
log="$TEST_TMPDIR/fuzz.log"
status=0
"$bin" -runs="$runs" -seed=1 -max_len=262144 -timeout=1 -rss_limit_mb=2048 \
  -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts" \
  "$TEST_TMPDIR/new" "$root/tests/fuzz/corpus" >"$log" 2>&1 || status=$?
grep -E "INITED|DONE|^stat::" "$log" || true
if [ "$status" != 0 ]; then
  tail -60 "$log"
  echo "FAIL: the fuzzer stopped with status $status; the input is under $artifacts" \
       "(reproduce: tests/fuzz/build_fuzzer.sh /tmp/f && /tmp/f INPUT)" >&2
  exit 1
fi
# A run that loaded nothing or stopped early must not pass.
done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
if [ -z "$done_runs" ] || [ "$done_runs" -lt "$runs" ]; then
  echo "FAIL: executed ${done_runs:-no} inputs, expected $runs" >&2
  exit 1
fi
echo "PASS: $done_runs inputs, no crash"
