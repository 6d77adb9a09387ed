#!/usr/bin/env bash
# FFN / RMSNORM_GEMV / LM_HEAD emulator build: lays out the build dir $B from the worktree $W of a
# branch (NEW) and the worktree $OLDW of main (OLD), and builds bin/NEW, bin/OLD: one instrumented TU
# (ops_tu.cc) with OpFfn, OpRmsNormGemv and OpLmHead of that version, and the driver rt_ops.cc.
# plan_format.h: generated from $OLDW's py/.
#   usage: W=<branch worktree> OLDW=<main worktree> B=<build dir> bash setup.sh
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd); source $HERE/../emu_lib.sh
# ffn_build NAME new|old [extra include dir first] [bin dir]   (also used by mutate*.py); a version whose
# RmsNormToShared has kWide runs the ops' wide instantiation (ops_tu.cc EMU_WIDE), unless EMU_NARROW=1
# (the narrow one: at hidden sizes above 2,048 both versions then take the element-by-element norm)
ffn_build() {
  local wide=""; [ "${EMU_NARROW:-0}" = 1 ] || ! grep -q kWide $B/fake_$2/cuda/common.cuh || wide=-DEMU_WIDE
  emu_build $B/${4:-bin}/$1 $HERE/ops_tu.cc $HERE/rt_ops.cc "$wide" $B ${3:-} $B/fake_$2 $B/real_$2
}
[ "${1:-}" = lib ] && return 0  # sourced by mutate*.py for ffn_build
W=${W:?}; OLDW=${OLDW:?}; B=${B:?}
mkdir -p $B/{out,mut,bin}
emu_plan_format $OLDW $B/plan_format.h
emu_layout $W $B/fake_new $B/real_new $B/plan_format.h
emu_layout $OLDW $B/fake_old $B/real_old $B/plan_format.h
for f in op_ffn.cuh op_rmsnorm_gemv.cuh op_lm_head.cuh; do cp $W/cuda/$f $B/fake_new/cuda/; cp $OLDW/cuda/$f $B/fake_old/cuda/; done
grep -h "kWorkerThreads =" $B/real_*/cuda/worker.h
ffn_build NEW new & ffn_build OLD old & wait
ls -la $B/bin
