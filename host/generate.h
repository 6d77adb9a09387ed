// Greedy generation on an executor: the prompt, then new tokens until a stop id,
// max_new_tokens, or the package's max context.
#pragma once

#include <functional>
#include <vector>

#include "host/cpu_executor.h"
#include "host/package.h"

namespace tileinfer {

struct GenerateOptions {
  int max_new_tokens = 32;
  bool stop_at_eos = true;
  // Called with each new token as it is chosen (streaming); may be empty.
  std::function<void(int)> on_token;
};

struct GenerateResult {
  std::vector<int> tokens;    // new tokens, the stop token included when one ended it
  bool stopped_at_eos = false;
  double prompt_ms = 0;       // wall time of the prompt positions
  double decode_ms = 0;       // wall time of the generated positions (after the first)
};

// Throws Error for an empty prompt, an id outside the vocabulary, a prompt or
// prompt + max_new_tokens beyond the max context, or a non-finite logit.
GenerateResult GenerateGreedy(CpuExecutor& exec, const Package& pkg, const std::vector<int>& prompt,
                              const GenerateOptions& options);

}  // namespace tileinfer
