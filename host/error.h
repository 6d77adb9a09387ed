// The one error type of the host library: a message that says what is wrong and what to do.
#pragma once

#include <stdexcept>
#include <string>

namespace tileinfer {

// Thrown inside the library; the public API (api.h) turns it into a status value.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace tileinfer
