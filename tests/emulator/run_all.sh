#!/usr/bin/env bash
# All emulator suites on package format 2 in one go (17 minutes on 2 cores): OLD = $OLD (default main)
# against NEW = $NEW (default HEAD), each a detached worktree $R/wt/{old,new} of $REPO (default: the checkout this
# folder is in; only read), reused only when at that commit; builds and logs under $R (default
# ${TMPDIR:-/tmp}/emu_run). A version without RedAddU64's host fallback (before exp/emu-ffn-f2, e.g. f1d76a0) gets
# it in its worktree, uncommitted (ffn/README.md, run.log item 21). STEP=k in the environment thins every comparison.
# Dropped with format 2: direct/ and the pair mutants (ffn/mutate_pair.py); their op and code are not on main.
#   OLD=f1d76a0 NEW=main bash tests/emulator/run_all.sh    logs: $R/logs/*.log, summary lines at the end
# Exit 1 when a comparison fails, NEW is not clean in a mutrun or a mutant is not caught, except the deleted
# barriers in $NOCATCH, which no case can catch on main 402ee0f (run.log item 23: three sit in common.cuh functions
# these ops never call; three order a task against the block's next one, here the same op, ordered by its own barriers;
# since v51t's template lines, op_ffn.cuh's and op_lm_head.cuh's are one line lower: L92, L56; run.log item 26).
set -uo pipefail
S=$(cd "$(dirname "$0")" && pwd); R=${R:-${TMPDIR:-/tmp}/emu_run}
REPO=${REPO:-$(git -C "$S" rev-parse --show-toplevel)}; OLD=${OLD:-main}; NEW=${NEW:-HEAD}
NOCATCH=${NOCATCH-ffn_del_L92 lm_del_L56 common_del_L62 common_del_L76 common_del_L86 common_del_L93}
WT=$R/wt; BD=$R/build; L=$R/logs; mkdir -p $WT $BD $L; rm -f $L/*.log
wt() {  # wt NAME REV: $WT/NAME, a detached worktree at REV
  local w=$WT/$1 c; c=$(git -C "$REPO" rev-parse --verify "$2^{commit}") || return 1
  if [ ! -f $w/.git ] || [ "$(git -C $w rev-parse HEAD)" != $c ]; then
    git -C "$REPO" worktree remove --force $w 2>/dev/null; rm -rf $w; git -C "$REPO" worktree prune
    git -C "$REPO" worktree add -q --detach $w $c || return 1; fi
  grep -B1 'red.relaxed.gpu.global.add.u64' $w/cuda/common.cuh | grep -q __CUDA_ARCH__ || sed -i '/asm volatile("red.relaxed.gpu.global.add.u64/{s/^/#ifdef __CUDA_ARCH__\n/;s/$/\n#else\n  *p += static_cast<unsigned long long>(q);\n#endif/}' $w/cuda/common.cuh
  echo "worktree $1 = $2 = $(git -C $w log -1 --format='%h %s' | cut -c1-90); uncommitted: $(git -C $w diff --stat | tail -1)"
}
{ wt old "$OLD" && wt new "$NEW"; } > $L/worktrees.log 2>&1 || { cat $L/worktrees.log; exit 2; }
# 1. ATTN_OUT: 570 cases and `orig` (736); deleted barriers (mutate.py + mutrun.sh, 10 cases each); value
# mutants (mutate_f2.py + mutrun_f2.sh, every 4th case)
A=$BD/ao; rm -rf $A/mut $A/mutsrc
B=$A OLDW=$WT/old NEWW=$WT/new bash $S/setup_ao.sh > $L/ao_setup.log 2>&1
B=$A python3 $S/compare_ao.py > $L/ao_compare.log 2>&1
B=$A python3 $S/compare_ao.py orig > $L/ao_compare_orig.log 2>&1
B=$A python3 $S/mutate.py > $L/ao_mutate.log 2>&1; B=$A bash $S/mutrun.sh > $L/ao_mutrun.log 2>&1
B=$A python3 $S/mutate_f2.py > $L/ao_mutate_f2.log 2>&1; B=$A bash $S/mutrun_f2.sh > $L/ao_mutrun_f2.log 2>&1
# 2. FFN / RMSNORM_GEMV / LM_HEAD (ffn/): 768 cases; deleted barriers (3-12 cases each); value mutants (every 4th)
F=$BD/ffn; rm -rf $F/mut $F/mutsrc
W=$WT/new OLDW=$WT/old B=$F bash $S/ffn/setup.sh > $L/ffn_setup.log 2>&1
B=$F python3 $S/ffn/compare_ops.py > $L/ffn_compare_ops.log 2>&1
B=$F python3 $S/ffn/mutate.py > $L/ffn_mutate.log 2>&1; B=$F bash $S/ffn/mutrun.sh > $L/ffn_mutrun.log 2>&1
B=$F python3 $S/ffn/mutate_f2.py > $L/ffn_mutate_f2.log 2>&1; B=$F bash $S/ffn/mutrun_f2.sh > $L/ffn_mutrun_f2.log 2>&1
# 3. ATTENTION (attention/): 2,067 cases; deleted barriers and the warps' states reversed, 40 cases each
T=$BD/at; rm -rf $T/mut
B=$T OLDW=$WT/old NEWW=$WT/new bash $S/attention/setup.sh > $L/at_setup.log 2>&1
B=$T python3 $S/attention/compare_at.py > $L/at_compare_at.log 2>&1
B=$T python3 $S/attention/mutate.py > $L/at_mutate.log 2>&1
# Summary: cases and NEW = OLD bitwise counts per suite, then one line per mutant (caught or NOT caught)
ok=1; grep "^worktree" $L/worktrees.log
grep -H "^cases" $L/ao_compare*.log $L/ffn_compare_ops.log $L/at_compare_at.log | cut -c1-200
for f in $L/ao_compare.log $L/ao_compare_orig.log; do
  echo "$(basename $f): bitwise NEW = OLD $(grep -o '"\(attn\|out\|resid\)_bitequal": [0-9]*\|"invalid_equal": [0-9]*' $f | tr -d '"' | paste -sd' ')"
  grep -q "^cases [0-9]*, failed 0," $f || { echo "  ^ FAILED"; ok=0; }; done
grep -H "^bitwise" $L/ffn_compare_ops.log
grep -q "^bitwise NEW = OLD ([^)]*) \([0-9]*\)/\1; clean runs ([^)]*) \([0-9]*\)/\2;" $L/ffn_compare_ops.log || { echo "  ^ FAILED"; ok=0; }
grep -q "^cases [0-9]*, failed 0," $L/at_compare_at.log || { echo "at_compare_at.log FAILED"; ok=0; }
grep -l Traceback $L/*.log | sed 's/$/: Traceback/' | grep . && ok=0
grep -H "^skip" $L/*mutate*.log
# mutrun.sh: a case caught = anything but rc=0 and nothing reported; compare_ao.py: failed > 0; compare_ops.py:
# not bitwise or not clean (REF-ONLY alone is not caught); attention/mutate.py: failed > 0
mut() {  # mut LOG run|ao|ffn|at
  awk -v k=$2 -v f=$(basename $1) -v nocatch=" $NOCATCH " '
    function out(m, c, d) {
      if (!c && index(nocatch, " " m " ")) d = d "; in NOCATCH"; else if (!c) bad++
      printf "mutant %-16s %-16s %s (%s)\n", m, f, c ? "caught" : "NOT caught", d }
    k == "run" && /^(bin|mut)\// { b = $1; sub(/^[a-z]+\//, "", b); if (!(b in n)) o[++no] = b; n[b]++; if ($0 !~ /rc=0 CLEAN \(nothing reported\)$/) r[b]++ }
    k != "at" && /^== mutant/ { if (m != "") out(m, 0, "no result"); m = $3 }
    k == "ao" && m != "" && /^cases [0-9]+, failed/ { out(m, $4 + 0 > 0, "failed " ($4 + 0) " of " ($2 + 0) " cases"); m = "" }
    k == "ffn" && m != "" && /^bitwise NEW = OLD/ {
      s = $0; i = 0; while (match(s, /[0-9]+\/[0-9]+/)) { v[++i] = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH) }
      split(v[1], e, "/"); split(v[2], cl, "/"); out(m, e[1] < e[2] || cl[1] < cl[2], "bitwise " v[1] ", clean " v[2]); m = "" }
    k == "at" && $2 == "cases" { out($1, $5 + 0 > 0, "failed " ($5 + 0) " of " ($3 + 0) " cases") }
    k == "at" && $2 != "cases" && /^(del_L|warps_)/ { out($1, 0, "no result") }
    END {
      if (m != "") out(m, 0, "no result")
      for (i = 1; i <= no; i++) { b = o[i]
        if (b ~ /NEW$/) { printf "%-23s %-16s clean %d/%d\n", b, f, n[b] - r[b], n[b]; if (r[b]) bad++ }
        else out(b, r[b] > 0, r[b] + 0 "/" n[b] " cases reported") }
      exit (bad > 0) }' $1
}
mut $L/ao_mutrun.log run || ok=0; mut $L/ao_mutrun_f2.log ao || ok=0
mut $L/ffn_mutrun.log run || ok=0; mut $L/ffn_mutrun_f2.log ffn || ok=0; mut $L/at_mutate.log at || ok=0
[ $ok = 1 ] && echo "ALL OK" || { echo "SOME CHECK FAILED (above)"; exit 1; }
