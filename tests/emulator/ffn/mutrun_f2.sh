#!/bin/bash
# Each mutant of mutate_f2.py as NEW in compare_ops.py on every STEP-th case (default 4); prints the
# first 3 failures that are not only "REF-ONLY" and the summary lines. usage: B=<build dir> [STEP=k] bash mutrun_f2.sh [names]
B=${B:?}; HERE=$(cd "$(dirname "$0")" && pwd)
for m in ${@:-triple_y12 triple_dot8 triple_fb_rot ffn_add_plus1 ffn_skip_last lm_no_invalid}; do
  echo "== mutant $m (STEP=${STEP:-4})"
  NEW_BIN=$B/mut/$m STEP=${STEP:-4} python3 $HERE/compare_ops.py > $B/mut_$m.log 2>&1
  grep "^FAIL" $B/mut_$m.log | grep -v -E "^FAIL \([^)]*\) REF-ONLY[^;]*$" | head -3 | cut -c1-400; grep -E "^(cases|bitwise|RMSNORM_GEMV cases)" $B/mut_$m.log
done
