#!/usr/bin/env bash
# ATTENTION emulator build: OLD = main, NEW = a branch (each with its own worker.h and common.cuh).
#   usage: B=<build dir> OLDW=<worktree of main> NEWW=<worktree of the branch> bash setup.sh
# Lays out $B (at_{new,old}.cuh = cuda/op_attention.cuh, fake_*/cuda/common.cuh, real_*/cuda/{worker.h,
# select.h}, plan_format.h generated from OLDW's py/, merge_{new,old}) and builds bin/AT_NEW, bin/AT_OLD
# (-> compare_at.py).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd); source $HERE/../emu_lib.sh
B=${B:?}; OLDW=${OLDW:?}; NEWW=${NEWW:?}
mkdir -p $B/{out,bin}
cp $NEWW/cuda/op_attention.cuh $B/at_new.cuh; cp $OLDW/cuda/op_attention.cuh $B/at_old.cuh
emu_plan_format $OLDW $B/plan_format.h
emu_layout $NEWW $B/fake_new $B/real_new $B/plan_format.h
emu_layout $OLDW $B/fake_old $B/real_old $B/plan_format.h
# merge_{new,old}: 1 when the version's worker.cu gives ATTENTION's merge (kWarps + 1) x group floats more
grep -q "(static_cast<size_t>(device::kWarps) + 1) \* group" $NEWW/cuda/worker.cu && echo 1 > $B/merge_new || echo 0 > $B/merge_new
grep -q "(static_cast<size_t>(device::kWarps) + 1) \* group" $OLDW/cuda/worker.cu && echo 1 > $B/merge_old || echo 0 > $B/merge_old
# AT_MERGE_ONCE: the version's worker.h has MergeWorkFloats (v30's MergeOnce; rt_at.cc, $AT_MERGE)
once_new=0; grep -q MergeWorkFloats $NEWW/cuda/worker.h && once_new=1
once_old=0; grep -q MergeWorkFloats $OLDW/cuda/worker.h && once_old=1
# AT_WIDE: the version's OpAttention is a template on kOnePass (v52) or kWide (v53): its wide
# kernel's instantiation, the one that holds every form of AttendChunkTiles (v52's narrow one is the
# version before, unchanged). AT_NARROW=1 builds NEW's narrow instantiation instead (v53's runs head
# dims up to 64 and groups up to 4 only: compare with AT_NARROW=1, which keeps those cases).
for v in new old; do
  once=once_$v; wide=""; grep -q "template <bool kOnePass" $B/at_$v.cuh && wide=-DAT_WIDE
  [ $v = new ] && [ "${AT_NARROW:-0}" = 1 ] && wide=""
  emu_build $B/bin/AT_${v^^} $HERE/at_tu.cc $HERE/rt_at.cc "-DOPFILE=\"at_$v.cuh\" -DAT_MERGE_ONCE=${!once} $wide" $B $B/fake_$v $B/real_$v &
done; wait
ls -la $B/bin
