#!/usr/bin/env bash
# Here, with nvcc and no GPU: the sm_90 machine code of each worker kernel (WorkerKernel<false>, the
# narrow one; <true>, the wide one; cuda/worker.h WorkerWide), in bytes. With --by_op, also what
# each opcode's case of RunTask adds to each: the kernel compiled again with that case emptied.
#   bash tests/gpu/worker_code_size.sh [--by_op]        (~10 s a compile on 2 cores)
# Code a model never runs has cost the small shapes through instruction fetch (docs/PERFORMANCE.md,
# v53-v54n; the twenty-ninth session's Next reads --by_op).
set -euo pipefail
cd "$(dirname "$0")/../.."
by_op=0
case "${1:-}" in --by_op) by_op=1 ;; "") ;; *) echo "usage: worker_code_size.sh [--by_op]" >&2; exit 2 ;; esac
command -v nvcc >/dev/null || { echo "worker_code_size.sh: no nvcc on PATH (./setup.sh installs the CUDA toolkit)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/gen/cuda"
PYTHONPATH=py python3 py/planner/gen_format_header.py "$tmp/gen/cuda/plan_format.h"
# Prints "NARROW WIDE" (bytes of the two kernels' .text sections) of cuda/worker.cu under $1.
kernel_bytes() {
  nvcc -cubin -O3 -std=c++17 -arch=sm_90 -I"$1" -I"$tmp/gen" -o "$tmp/w.cubin" "$1/cuda/worker.cu"
  readelf -S -W "$tmp/w.cubin" 2>/dev/null | python3 -c '
import sys
size = {}
for line in sys.stdin:
    f = line.split()
    if "PROGBITS" not in f:
        continue
    i = f.index("PROGBITS")
    if f[i - 1].startswith(".text.") and "WorkerKernelILb" in f[i - 1]:
        size["0" if "WorkerKernelILb0" in f[i - 1] else "1"] = int(f[i + 3], 16)
print(size["0"], size["1"])'
}
read -r narrow wide < <(kernel_bytes .)
echo "narrow kernel: $narrow bytes; wide kernel: $wide bytes"
[ $by_op = 1 ] || exit 0
for op in EMBED RMSNORM_GEMV ATTENTION ATTN_OUT FFN LM_HEAD; do
  rm -rf "$tmp/src" && mkdir -p "$tmp/src" && cp -r cuda "$tmp/src/"
  sed -i "s|^\(    case format::Opcode::$op:\) .* break;|\1 break;|" "$tmp/src/cuda/worker.cu"
  grep -q "case format::Opcode::$op: break;" "$tmp/src/cuda/worker.cu" ||
    { echo "worker_code_size.sh: RunTask's case $op not found in cuda/worker.cu" >&2; exit 1; }
  read -r n w < <(kernel_bytes "$tmp/src")
  echo "$op: narrow +$((narrow - n)) bytes, wide +$((wide - w)) bytes"
done
