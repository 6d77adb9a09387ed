# Shell helpers of the emulator (source it): lay out a version's headers and build one emulator binary.
# EMU = this folder (emu_core.h, cuda_fake_env.h, rt_ao.cc, ffn/, direct/).
EMU=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# emu_layout WORKTREE FAKE_DIR REAL_DIR PLAN_FORMAT_H
#   FAKE_DIR/cuda/common.cuh: WORKTREE's, with <cuda_bf16.h> replaced by cuda_fake_env.h;
#   REAL_DIR/cuda: WORKTREE's worker.h (kWorkerThreads), select.h, and PLAN_FORMAT_H
emu_layout() {
  mkdir -p $2/cuda $3/cuda
  sed 's|#include <cuda_bf16.h>|#include "cuda_fake_env.h"  // EMU: was <cuda_bf16.h>|' $1/cuda/common.cuh > $2/cuda/common.cuh
  cp $1/cuda/worker.h $1/cuda/select.h $4 $3/cuda/
}
# emu_plan_format WORKTREE OUT: plan_format.h from WORKTREE's py/ (== bazel //cuda:plan_format_header)
emu_plan_format() { (cd $1 && PYTHONPATH=py python3 py/planner/gen_format_header.py $2); }
# emu_build OUT TU RT "OP_FLAGS" INCDIR...: TU (the op files, instrumented: -fsanitize=thread without its
# runtime, every load/store calls emu_core.h's hooks) + RT (runtime, -O2) -> OUT. Include dirs in order
# after $EMU (emu_core.h, cuda_fake_env.h); the first that has cuda/common.cuh wins.
emu_build() {
  local out=$1 tu=$2 rt=$3 opf=$4 inc="-I$EMU" d tmp; shift 4
  for d in "$@"; do inc="$inc -I$d"; done
  local CX="g++ -std=gnu++17 -g -Wall -Wno-unused -Wno-unknown-pragmas -Wno-sign-compare $inc"
  tmp=$(mktemp -d) && mkdir -p $(dirname $out) &&
  $CX -O1 -fsanitize=thread $opf -c $tu -o $tmp/op.o && $CX -O2 $opf -c $rt -o $tmp/rt.o &&
  g++ $tmp/op.o $tmp/rt.o -o $out -ldl; local rc=$?; rm -rf $tmp; return $rc
}
# emu_mutrun BINARY CASE...: run BINARY (relative to the current dir) on each case (its arguments, less
# the output file); one line each: binary, case, exit code and the first 3 report lines, or CLEAN
emu_mutrun() {
  local b=$1 c out rc first; shift
  for c in "$@"; do
    out=$(./$b $c out/mut.bin 2>&1); rc=$?
    first=$(echo "$out" | grep -v "^barriers" | grep -v "^first report" | head -3 | tr '\n' ';')
    echo "$b [$c] rc=$rc ${first:-CLEAN (nothing reported)}"
  done
}
