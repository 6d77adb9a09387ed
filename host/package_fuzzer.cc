// libFuzzer target for the package reader and the plan validator (issue 8). Any input must
// end in a package that validates or in a tileinfer::Error; a crash, a sanitizer report, an
// uncaught exception (std::bad_alloc included), a hang or a large allocation is a bug.
// Built with clang by tests/fuzz/build_fuzzer.sh; corpus and run: tests/fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "host/error.h"
#include "host/package.h"
#include "host/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    // Checksums off: a mutated byte would otherwise stop nearly every input at the SHA-256
    // check, and the fuzzer would never reach the structural checks behind it.
    const std::unique_ptr<tileinfer::Package> pkg =
        tileinfer::Package::FromBytes(data, size, "fuzz.tpkg", /*verify_checksums=*/false);
    tileinfer::ValidatePlan(*pkg);
  } catch (const tileinfer::Error&) {
    // A refusal is the expected outcome for almost every input.
  }
  return 0;
}
