#!/usr/bin/env bash
# Direct-attention emulator build: lays out the build dir $B (default ${TMPDIR:-/tmp}/emu_direct_build)
# from a worktree of exp/direct-attention (ao.cuh = cuda/op_attn_out.cuh, fake/cuda/common.cuh,
# real/cuda/{worker.h, select.h, plan_format.h}) and builds $B/bin/DA (512 threads).
#   usage: [B=<build dir>] bash setup.sh <worktree of exp/direct-attention>
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd); source $HERE/../emu_lib.sh
# da_build OUT OPFILE: -fno-tree-sra keeps the uint4 cache loads of the 16-byte K path 16-byte accesses
# (alignment-checked) instead of 4 x 4 bytes   (also used by mutate.py)
da_build() { emu_build $1 $EMU/ao_tu.cc $HERE/rt_da.cc "-fno-tree-sra -DOPFILE=\"$2\"" $B $B/fake $B/real; }
B=${B:-${TMPDIR:-/tmp}/emu_direct_build}
[ "${1:-}" = lib ] && return 0
D=${1:?usage: bash setup.sh <worktree of exp/direct-attention>}
mkdir -p $B/{out,mut,bin}
cp $D/cuda/op_attn_out.cuh $B/ao.cuh
emu_plan_format $D $B/plan_format.h
emu_layout $D $B/fake $B/real $B/plan_format.h
grep -q "kWorkerThreads = 512" $B/real/cuda/worker.h
da_build $B/bin/DA ao.cuh
