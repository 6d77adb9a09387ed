// Generation one Step at a time (the CPU executor's way): the prompt, then new tokens until
// a stop id, max_new_tokens, or on_token returning false. Greedy selection comes from the
// plan's candidate slots; with temperature > 0 the sampler draws from the full logits,
// with the token's position as the draw counter (reproducible for a given seed).
#pragma once

#include <string>
#include <vector>

#include "host/error.h"
#include "host/executor.h"
#include "host/package.h"

namespace tileinfer {

// Throws Error for an empty prompt, an id outside the vocabulary, a prompt or
// prompt + max_new_tokens beyond the max context, or a non-finite logit.
GenerateResult GenerateBySteps(Executor& exec, const Package& pkg, const std::vector<int>& prompt,
                              const GenerateOptions& options);

// "1,2,3" -> {1, 2, 3}; an empty string gives {}. Throws Error naming `what` (e.g. the flag)
// when an item is not an integer.
std::vector<int> ParseIntList(const std::string& text, const std::string& what);

// The error of a request stopped by a non-finite logit at position `pos`.
Error NonFiniteLogitError(int pos);

// Throws Error "<what> <id> is outside the vocabulary (0..V-1)" for an id outside the
// package model's vocabulary (what: e.g. "token id", "prompt token id").
void CheckTokenId(const Package& pkg, int id, const std::string& what);

// The checks of Executor::Step (and the GPU's forced windows): throws Error when `token` is
// outside the vocabulary or `pos` outside [0, max context).
void CheckStep(const Package& pkg, int token, int pos);

// The checks of `options` that depend on no prompt or package: max_new_tokens at least 1,
// and CheckSamplingOptions. Throws Error.
void CheckGenerateOptions(const GenerateOptions& options);

// The checks every executor makes before generating (same errors as above), those of
// CheckGenerateOptions among them.
void CheckGenerateRequest(const Package& pkg, const std::vector<int>& prompt, const GenerateOptions& options);

}  // namespace tileinfer
