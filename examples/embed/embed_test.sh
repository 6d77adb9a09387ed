#!/usr/bin/env bash
# The example program generates through the public API, and reports errors as it should.
set -uo pipefail
out=$(examples/embed/embed tests/golden/tiny_9x3.tpkg 1,5,7 6 2>/dev/null)
rc=$?
echo "$out"
[ $rc = 0 ] || { echo "FAIL: exit $rc"; exit 1; }
echo "$out" | grep -qE "^[0-9]+ tokens on the CPU executor" || { echo "FAIL: no token count line"; exit 1; }
n=$(echo "$out" | grep -oE "^[0-9]+ tokens" | cut -d' ' -f1)
[ "$n" -ge 1 ] && [ "$n" -le 6 ] || { echo "FAIL: $n tokens"; exit 1; }
err=$(examples/embed/embed /nonexistent.tpkg 1 2>&1)
[ $? = 1 ] && echo "$err" | grep -q "cannot open package" || { echo "FAIL: bad path not reported: $err"; exit 1; }
err=$(examples/embed/embed tests/golden/tiny_9x3.tpkg 100000 2>&1)
[ $? = 1 ] && echo "$err" | grep -q "outside the vocabulary" || { echo "FAIL: bad id not reported: $err"; exit 1; }
for ids in abc 1,,2 1, ,1 99999999999 -3; do
  err=$(examples/embed/embed tests/golden/tiny_9x3.tpkg "$ids" 2>&1)
  [ $? = 2 ] && echo "$err" | grep -q "is not a token id" || { echo "FAIL: prompt ids '$ids' not refused: $err"; exit 1; }
done
for n in 0 x 3x; do
  err=$(examples/embed/embed tests/golden/tiny_9x3.tpkg 1,5 "$n" 2>&1)
  [ $? = 2 ] && echo "$err" | grep -q "must be a positive integer" || { echo "FAIL: max_new_tokens '$n' not refused: $err"; exit 1; }
done
echo "PASS"
