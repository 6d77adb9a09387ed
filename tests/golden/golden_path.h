// Where a C++ test finds a golden package (//tests/golden:golden_path).
#pragma once

#include <cstdlib>
#include <string>

namespace tileinfer {

// tests/golden/<name>. Under `bazel test` the working directory is the runfiles root
// ($TEST_SRCDIR/$TEST_WORKSPACE); run by hand, the binary is expected to start in the
// repository root.
inline std::string GoldenPath(const std::string& name) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  const std::string rel = "tests/golden/" + name;
  if (srcdir != nullptr && workspace != nullptr) return std::string(srcdir) + "/" + workspace + "/" + rel;
  return rel;
}

}  // namespace tileinfer
