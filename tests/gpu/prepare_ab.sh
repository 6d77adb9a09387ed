#!/usr/bin/env bash
# Here: the two worker builds of a same-run A/B (tests/gpu/ab_compare.sh) from two revisions:
#   bash tests/gpu/prepare_ab.sh REF_A REF_B     e.g. main exp/attention-tiles
# Builds each revision (bazel -c opt, in a temporary git worktree) with tests/gpu/prepare.sh
# and packs A as .gpu/a and B as .gpu/bin (the build under test: device_checks.sh stages run
# it) into .gpu/ab.tar.xz (~12 MB), which a GPU call carries and unpacks with
# `tar -C .gpu -xJf .gpu/ab.tar.xz`; then `bash tests/gpu/ab_compare.sh .gpu/a .gpu/bin`.
set -euo pipefail
cd "$(dirname "$0")/../.."
A=${1:?usage: prepare_ab.sh REF_A REF_B}
B=${2:?usage: prepare_ab.sh REF_A REF_B}
root=$(pwd)
tmp=$(mktemp -d)
trap 'for w in "$tmp"/a "$tmp"/b; do [ -d "$w" ] && git -C "$root" worktree remove --force "$w"; done; rm -rf "$tmp"' EXIT
mkdir -p .gpu "$tmp/pack"
for side in a b; do
  ref=$A; packed=a; [ $side = b ] && ref=$B && packed=bin
  git worktree add -q --detach "$tmp/$side" "$ref"
  (cd "$tmp/$side" && bash tests/gpu/prepare.sh > "$tmp/$side.log" 2>&1) || { tail -20 "$tmp/$side.log"; exit 1; }
  cp -r "$tmp/$side/.gpu/bin" "$tmp/pack/$packed"
  (cd "$tmp/$side" && bazel shutdown >/dev/null 2>&1 || true)
  echo "$packed = $ref ($(git rev-parse --short "$ref")): $(grep -E 'registers' "$tmp/pack/$packed/worker_kernel_worker.ptxas.txt" | tail -1)"
done
rm -f .gpu/ab.tar.xz && tar -C "$tmp/pack" -cJf .gpu/ab.tar.xz a bin
echo "wrote .gpu/ab.tar.xz ($(du -h .gpu/ab.tar.xz | cut -f1)): a = $A, bin = $B"
