// Choosing the next token from a row of logits: greedy, or sampled with temperature,
// top-k and top-p (nucleus) from a seeded, counter-based random stream, so that the same
// seed, package and prompt give the same tokens on every run and machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tileinfer {

struct SamplingOptions {
  float temperature = 0.0f;  // 0: greedy (largest logit, lowest id among ties)
  int top_k = 0;             // keep the k most likely ids (0: all)
  float top_p = 1.0f;        // then the smallest set whose probability reaches top_p (1: all)
  uint64_t seed = 0;
};

// Throws Error on options out of range (temperature < 0 or not finite, top_k < 0,
// top_p outside (0, 1]), with what to pass instead.
void CheckSamplingOptions(const SamplingOptions& options);

// `v` (a command line's or Python's double) as a float option named `what`, e.g.
// "--temperature". Throws Error, naming the number given, for a finite v beyond float's range
// (as a float it would be inf, refused as "inf") and for a nonzero v that a float holds only as
// 0 (1e-50: silently greedy otherwise); its advice offers 0 only where `zero_allowed` (the
// temperature; not top_p).
float OptionFloat(double v, const std::string& what, bool zero_allowed);

// A uniform number in [0, 1) for draw `counter` of stream `seed` (cuda/sample.h's DrawBits;
// 53 bits).
double UniformDraw(uint64_t seed, uint64_t counter);

// The chosen id for `logits` (V,), or kCandidateNonFinite (-1) when a logit is not finite.
// `counter` selects the random draw (the decode uses the token's position), so a choice
// never depends on what was drawn before. The rule (temperature, then top-k, then top-p,
// fixed-point probabilities, ties to the lower id) is cuda/sample.h's, which the GPU worker
// implements too: the same logits, options and counter give the same id on both (up to the
// exp() rounding that sample.h describes).
int SampleToken(const std::vector<float>& logits, const SamplingOptions& options, uint64_t counter);

}  // namespace tileinfer
