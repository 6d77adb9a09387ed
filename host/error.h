// The one error type of the host library: a message that says what is wrong and what to do.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

namespace tileinfer {

// Thrown inside the library; the public API (api.h) turns it into a status value.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A command-line tool's exit code: run()'s, or 1 after "error: <message>" on stderr when it
// throws Error.
template <typename Run>
int ExitCodeOf(Run&& run) {
  try {
    return run();
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace tileinfer
