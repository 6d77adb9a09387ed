#!/bin/bash
# bin/NEW and every mutant of mutate.py on a few cases each (args of rt_ops.cc:
# op K r0 nrows ntasks seed poison xmis special); a mutant must be reported (race, bounds,
# alignment, ownership) or fail; bin/NEW must be clean. Summary: one line per (binary, case).
source "$(dirname "${BASH_SOURCE[0]}")/../emu_lib.sh"; B=${B:?}; cd $B; mkdir -p out
FFN=("5 2048 5 62 2 1 1 0 0" "5 576 3 12 2 2 1 0 0" "5 64 0 17 1 3 1 0 0" "5 40 7 9 2 4 0 0 0" "5 36 1 16 2 5 1 0 0" "5 576 3 12 2 6 0 1 0")
GEMV=("2 2048 3 70 2 7 1 0 0" "2 576 0 9 2 8 0 1 0" "2 36 5 1 2 9 1 0 0")
LM=("7 576 3 40 2 10 1 0 1" "7 2048 0 70 2 11 0 0 0" "7 36 2 8 2 12 1 1 2")
for b in bin/NEW $(find mut -maxdepth 1 -type f -perm -u+x | sort); do
  case $(basename $b) in ffn_*) C=("${FFN[@]}");; gemv_*) C=("${GEMV[@]}");; lm_*) C=("${LM[@]}");; *) C=("${FFN[@]}" "${GEMV[@]}" "${LM[@]}");; esac
  emu_mutrun $b "${C[@]}"
done
