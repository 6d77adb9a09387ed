#!/usr/bin/env bash
# All emulator suites in one go (about 20 minutes on 2 cores). Worktrees, builds and logs under $R
# (default ${TMPDIR:-/tmp}/emu_run); the repository $REPO (default: the checkout this folder is in) is
# only read (git worktree add --detach). OLD = $OLD (default main), NEW = the branches below.
#   bash tests/emulator/run_all.sh          logs: $R/logs/*.log, summary lines at the end
set -uo pipefail
S=$(cd "$(dirname "$0")" && pwd); R=${R:-${TMPDIR:-/tmp}/emu_run}
REPO=${REPO:-$(git -C "$S" rev-parse --show-toplevel)}; OLD=${OLD:-main}; L=$R/logs; mkdir -p $L
for n in main:$OLD aoc:exp/attn-out-one-chunk pffn:exp/pair-ffn prows:exp/pair-rows da:exp/direct-attention \
         awm:exp/attn-warp-merge; do
  [ -d $R/wt/${n%%:*} ] || git -C "$REPO" worktree add --detach $R/wt/${n%%:*} ${n#*:} >/dev/null; done
WT=$R/wt; BD=$R/build
# 1. ATTN_OUT: exp/attn-out-one-chunk and exp/pair-rows vs main
for b in aoc prows; do
  B=$BD/ao_$b OLDW=$WT/main NEWW=$WT/$b bash $S/setup_ao.sh > $L/${b}_setup_ao.log 2>&1
  B=$BD/ao_$b python3 $S/compare_ao.py > $L/${b}_compare_ao.log 2>&1
done
B=$BD/ao_aoc python3 $S/compare_ao.py orig > $L/aoc_compare_ao_orig.log 2>&1
B=$BD/ao_aoc python3 $S/mutate.py > $L/aoc_mutate.log 2>&1; B=$BD/ao_aoc bash $S/mutrun.sh > $L/aoc_mutrun.log 2>&1
M=$BD/ao_aoc_recip; mkdir -p $M/bin $M/out; cp $BD/ao_aoc/mut/ao_recip $M/bin/AO_NEW; cp $BD/ao_aoc/bin/AO_OLD $M/bin/
B=$M python3 $S/compare_ao.py > $L/aoc_recip_mutant_compare_ao.log 2>&1
# 2./3. FFN, RMSNORM_GEMV, LM_HEAD: exp/pair-ffn and exp/pair-rows vs main; the pair mutants on every 4th
# case (mutrun_pair.sh), the fallback mutants on all cases; deleted barriers (mutate.py + mutrun.sh)
for b in pffn prows; do
  F=$BD/ffn_$b
  W=$WT/$b OLDW=$WT/main B=$F bash $S/ffn/setup.sh > $L/${b}_setup_ffn.log 2>&1
  B=$F python3 $S/ffn/compare_ops.py > $L/${b}_compare_ops.log 2>&1
  B=$F python3 $S/ffn/mutate_pair.py > $L/${b}_mutate_pair.log 2>&1
  B=$F bash $S/ffn/mutrun_pair.sh > $L/${b}_mutrun_pair.log 2>&1
  for m in fb_swap fb_cond_a; do
    NEW_BIN=$F/mut/$m B=$F python3 $S/ffn/compare_ops.py > $L/${b}_mut_${m}_all.log 2>&1; done
  rm -f $F/mut/*; B=$F python3 $S/ffn/mutate.py > $L/${b}_mutate.log 2>&1; B=$F bash $S/ffn/mutrun.sh > $L/${b}_mutrun.log 2>&1
done
# 4. direct attention (exp/direct-attention's OpAttnOut) against float64 numpy
export B=$BD/da; bash $S/direct/setup.sh $WT/da > $L/da_setup.log 2>&1
(cd $S/direct && python3 compare_da.py > $L/da_compare_da.log 2>&1 && python3 x1_elementwise.py > $L/da_x1_elementwise.log 2>&1 &&
 python3 mutate.py > $L/da_mutate.log 2>&1 && python3 mutrun.py > $L/da_mutrun.log 2>&1)
# 5. ATTENTION: exp/attn-warp-merge vs main, bitwise and against float64; deleted barriers and a reversed
# warp order (attention/mutate.py, on the first 40 cases)
A=$BD/at_awm; B=$A OLDW=$WT/main NEWW=$WT/awm bash $S/attention/setup.sh > $L/awm_setup_at.log 2>&1
B=$A python3 $S/attention/compare_at.py > $L/awm_compare_at.log 2>&1
B=$A python3 $S/attention/mutate.py > $L/awm_mutate_at.log 2>&1
grep -H "^cases" $L/*.log; grep -H "^== " $L/*mutrun_pair.log $L/da_mutrun.log | sed 's/: \[.*//'
