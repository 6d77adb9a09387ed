#!/usr/bin/env bash
# Builds the package fuzzer (host/package_fuzzer.cc) with Debian's clang and libFuzzer,
# ASan and UBSan: tests/fuzz/build_fuzzer.sh OUT [SRCROOT]. Bazel's C++ toolchain here is gcc,
# which has no libFuzzer, so this calls clang++ directly; the generated cuda/plan_format.h
# comes from `bazel build //cuda:plan_format_header` (bazel-bin) or, under Bazel, as FORMAT_H.
set -euo pipefail
out=${1:?usage: build_fuzzer.sh OUT [SRCROOT]}
root=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
CLANGXX=${CLANGXX:-clang++}
if ! command -v "$CLANGXX" >/dev/null 2>&1; then
  echo "build_fuzzer: $CLANGXX not found: the fuzzer needs Debian's clang (libFuzzer):" \
       "run ./setup.sh, or apt-get install clang" >&2
  exit 1
fi
# The generated header must be reachable as "cuda/plan_format.h".
format_h=${FORMAT_H:-$root/bazel-bin/cuda/plan_format.h}
if [ ! -f "$format_h" ]; then
  echo "build_fuzzer: $format_h is missing: run bazel build //cuda:plan_format_header" >&2
  exit 1
fi
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
mkdir -p "$gen/cuda"
cp "$format_h" "$gen/cuda/plan_format.h"
# -fno-sanitize-recover: every UBSan report aborts, so libFuzzer keeps the input as a crash.
"$CLANGXX" -std=c++17 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -I"$root" -I"$gen" \
  "$root/host/package_fuzzer.cc" "$root/host/package.cc" "$root/host/validate.cc" \
  -lcrypto -o "$out"
