#!/bin/bash
# EMU512: each mutant of mutate_pair.py as NEW in compare_ops.py on every 4th case (STEP=4);
# prints the summary line (failed cases and messages by kind). usage: B=<build dir> bash mutrun_pair.sh
B=${B:?}; HERE=$(cd "$(dirname "$0")" && pwd)
for m in $(ls $B/mut | grep -E '^(pair_|fb_|rows_)' | sort); do
  echo "== mutant $m"; NEW_BIN=$B/mut/$m STEP=${STEP:-4} python3 $HERE/compare_ops.py | grep -E "^cases" 
done
