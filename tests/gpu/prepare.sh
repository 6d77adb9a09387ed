#!/usr/bin/env bash
# Builds the GPU binaries here (bazel -c opt; the GPU machine has no Bazel) and copies them
# to .gpu/bin, the folder a GPU run carries. See tests/gpu/README.md.
# PREPARE_BAZEL_FLAGS (default none) go to the build, e.g. PREPARE_BAZEL_FLAGS=--define=phase_trace=1
# for the phase-trace measurement build (cuda/BUILD); prepare_ab.sh's builds inherit it.
set -euo pipefail
cd "$(dirname "$0")/../.."
read -r -a extra_flags <<< "${PREPARE_BAZEL_FLAGS:-}"
bazel build -c opt "${extra_flags[@]}" //host:decode //host:gpu_check //host:probe //host:bench //tests/bench:floor
mkdir -p .gpu/bin
for b in decode gpu_check probe bench; do install -m 755 "bazel-bin/host/$b" ".gpu/bin/$b"; strip ".gpu/bin/$b"; done
install -m 755 bazel-bin/tests/bench/floor .gpu/bin/floor && strip .gpu/bin/floor
cp bazel-bin/cuda/worker_kernel_worker.ptxas.txt .gpu/bin/
echo "${PREPARE_BAZEL_FLAGS:-}" > .gpu/bin/bazel_flags.txt  # which build this is (empty: the plain one)
rm -f .gpu/bin.tar.xz && tar -C .gpu -cJf .gpu/bin.tar.xz.part bin && mv .gpu/bin.tar.xz.part .gpu/bin.tar.xz  # whole or absent
# The gguf package for the GPU machine (no network there): smollm2_real and the llama.cpp peer.
mkdir -p .gpu/wheels
ls .gpu/wheels/gguf-*.whl >/dev/null 2>&1 || python3 -m pip download -q --no-deps gguf==0.19.0 -d .gpu/wheels
echo "prepared .gpu/bin (bazel flags: ${PREPARE_BAZEL_FLAGS:-none}): $(ls .gpu/bin | tr '\n' ' '); .gpu/bin.tar.xz; .gpu/wheels: $(ls .gpu/wheels | tr '\n' ' ')"
