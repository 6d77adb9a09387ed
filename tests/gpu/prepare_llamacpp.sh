#!/usr/bin/env bash
# Here (with network to PyPI): llama.cpp's source for the showcase's llama.cpp peer, from the
# llama-cpp-python sdist that vendors it (PyPI), stripped of .git, docs and models to
# ~13 MB: writes .gpu/llamacpp_src.tgz (git-ignored), which a GPU call carries; there
# `bash tests/gpu/showcase.sh build_llamacpp` builds llama-bench with CUDA (~5.5 min).
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$tmp" >/dev/null
tar -C "$tmp" -xzf "$tmp/llama_cpp_python-$VERSION.tar.gz"
src="$tmp/llama_cpp_python-$VERSION/vendor/llama.cpp"
rm -rf "$src/.git" "$src/docs" "$src/models" "$src/media"
mkdir -p .gpu
tar -C "$(dirname "$src")" -czf .gpu/llamacpp_src.tgz llama.cpp
echo "wrote .gpu/llamacpp_src.tgz ($(du -h .gpu/llamacpp_src.tgz | cut -f1)) from llama-cpp-python $VERSION"
