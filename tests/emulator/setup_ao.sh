#!/usr/bin/env bash
# ATTN_OUT emulator build: OLD = main, NEW = a branch (both from their own worker.h; 512 threads here).
#   usage: B=<build dir> OLDW=<worktree of main> NEWW=<worktree of the branch> bash setup_ao.sh
# Lays out $B (ao_{new,old}.cuh = cuda/op_attn_out.cuh, fake_*/cuda/common.cuh, real_*/cuda/{worker.h,
# select.h}, plan_format.h generated from OLDW's py/) and builds bin/AO_NEW, bin/AO_OLD
# (-> compare_ao.py; mutants -> mutate.py && bash mutrun.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/emu_lib.sh"
B=${B:?}; OLDW=${OLDW:?}; NEWW=${NEWW:?}
mkdir -p $B/{out,mut,bin}
cp $NEWW/cuda/op_attn_out.cuh $B/ao_new.cuh; cp $OLDW/cuda/op_attn_out.cuh $B/ao_old.cuh
emu_plan_format $OLDW $B/plan_format.h
emu_layout $NEWW $B/fake_new $B/real_new $B/plan_format.h
emu_layout $OLDW $B/fake_old $B/real_old $B/plan_format.h
grep -h "kWorkerThreads =" $B/real_*/cuda/worker.h
for v in new old; do
  emu_build $B/bin/AO_${v^^} $EMU/ao_tu.cc $EMU/rt_ao.cc "-DOPFILE=\"ao_$v.cuh\"" $B $B/fake_$v $B/real_$v &
done; wait
ls -la $B/bin
