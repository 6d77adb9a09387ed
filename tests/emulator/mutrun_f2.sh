#!/bin/bash
# Each mutant of mutate_f2.py as NEW in compare_ao.py on every STEP-th case (default 4); prints the
# first 3 failures and the summary lines. usage: B=<build dir> [STEP=k] bash mutrun_f2.sh [names]
B=${B:?}; HERE=$(cd "$(dirname "$0")" && pwd)
for m in ${@:-ao_fix_y ao_out_y ao_skip_row pair_swap}; do
  echo "== mutant $m (STEP=${STEP:-4})"
  NEW_BIN=$B/mut/$m STEP=${STEP:-4} python3 $HERE/compare_ao.py > $B/mut_$m.log 2>&1
  echo "failed cases: $(grep -c '^FAIL' $B/mut_$m.log); NOT BIT-IDENTICAL: $(grep -c 'NOT BIT-IDENTICAL' $B/mut_$m.log); checker/harness reports: $(grep -c 'NEW rc=' $B/mut_$m.log)"
  grep "^FAIL" $B/mut_$m.log | head -3 | cut -c1-400; grep -E "^cases" $B/mut_$m.log
done
