// What the decode CLI, the tests and the embedding API need of an executor of a plan.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "host/sampler.h"

namespace tileinfer {

struct GenerateOptions {
  int max_new_tokens = 32;
  bool stop_at_eos = true;
  SamplingOptions sampling;  // temperature 0: greedy
  // Called with each new token as soon as the host has it; may be empty. Returning false
  // ends the generation after that token (e.g. a stop string was completed).
  std::function<bool(int)> on_token;
  // Keep the K/V cache rows of the prompt's leading tokens that the executor's previous
  // requests left there (KvHistory::SharedPrefix): only the rest of the prompt runs. The
  // tokens are the same as without it (each row depends only on the tokens up to its position,
  // and the executors are deterministic); only prompt_ms shrinks. A chat's next turn repeats the
  // conversation so far, so it runs only the new turn. false: every position from 0.
  bool reuse_kv_cache = false;
};

struct GenerateResult {
  std::vector<int> tokens;    // new tokens, the stop token included when one ended it
  int prompt_reused = 0;      // leading prompt tokens whose K/V rows were kept (reuse_kv_cache)
  bool stopped_at_eos = false;
  double prompt_ms = 0;       // prompt positions and the first new token
  double decode_ms = 0;       // the remaining new tokens
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  // Runs input `token` at position `pos`; with `logits` false the LM_HEAD wave is skipped.
  // Positions come in order from 0, which starts a new request: one that skips a position throws
  // Error; an earlier one goes back (KvHistory, host/generate.h).
  virtual void Step(int token, int pos, bool logits) = 0;
  // After a Step with logits: the greedy token, or kCandidateNonFinite.
  virtual int32_t Select() = 0;
  // After a Step with logits: the vocabulary's logits (FP32).
  virtual std::vector<float> Logits() = 0;
  // Generation from position 0 (greedy, or sampled per options.sampling), or from the first
  // prompt position whose row is not kept (options.reuse_kv_cache). Throws Error on bad input
  // or a non-finite logit; after any error the next request starts from position 0.
  virtual GenerateResult Generate(const std::vector<int>& prompt, const GenerateOptions& options) = 0;
};

}  // namespace tileinfer
