#!/usr/bin/env bash
# Here: the worker builds of a same-run comparison (tests/gpu/ab_compare.sh) from revisions:
#   bash tests/gpu/prepare_ab.sh REF_A [REF...] REF_LAST   e.g. main exp/attention-tiles
# Builds each revision (bazel -c opt, in a temporary git worktree) with tests/gpu/prepare.sh
# and packs the first as .gpu/a, the middle ones as .gpu/b, .gpu/c, ..., and the last as
# .gpu/bin (the build under test: device_checks.sh stages run it) into .gpu/ab.tar.xz (~6 MB
# for the first build, ~1 MB for each further one), which a GPU call carries and unpacks with
# `tar -C .gpu -xJf .gpu/ab.tar.xz`; then e.g.
# `bash tests/gpu/ab_compare.sh A=.gpu/a B=.gpu/b C=.gpu/bin`.
# The archive is written last: wait for the "wrote" line before carrying it.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 2 ] || { echo "usage: prepare_ab.sh REF_A [REF...] REF_LAST" >&2; exit 2; }
refs=("$@")
root=$(pwd)
tmp=$(mktemp -d)
trap 'for w in "$tmp"/w*; do [ -d "$w" ] && git -C "$root" worktree remove --force "$w"; done; rm -rf "$tmp"' EXIT
mkdir -p .gpu "$tmp/pack"
letters=(a b c d e f g h)
names=()
for k in "${!refs[@]}"; do
  ref=${refs[$k]}; packed=${letters[$k]}; [ $k = $((${#refs[@]} - 1)) ] && packed=bin
  names+=("$packed")
  rev=$(git rev-parse --short "$ref")  # before the build: the ref may move meanwhile
  git worktree add -q --detach "$tmp/w$k" "$rev"
  (cd "$tmp/w$k" && bash tests/gpu/prepare.sh > "$tmp/w$k.log" 2>&1) || { tail -20 "$tmp/w$k.log"; exit 1; }
  cp -r "$tmp/w$k/.gpu/bin" "$tmp/pack/$packed"
  (cd "$tmp/w$k" && bazel shutdown >/dev/null 2>&1 || true)
  echo "$packed = $ref ($rev): $(bash tests/gpu/worker_registers.sh "$tmp/pack/$packed/worker_kernel_worker.ptxas.txt")"
done
# One xz block with a 64 MB window (-9, one thread: more threads cut the stream into separately
# packed blocks): the builds are nearly the same bytes, where tar -J's default 8 MB window
# packs each alone, ~6 MB (a call carries at most 64 MB, the tracked tree included).
rm -f .gpu/ab.tar.xz && tar -C "$tmp/pack" -cf - "${names[@]}" | xz -9 -T1 > .gpu/ab.tar.xz.part && mv .gpu/ab.tar.xz.part .gpu/ab.tar.xz
echo "wrote .gpu/ab.tar.xz ($(du -h .gpu/ab.tar.xz | cut -f1)): ${names[*]} = ${refs[*]}"
