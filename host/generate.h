// Generation one Step at a time (the CPU executor's way): the prompt, then new tokens until
// a stop id, max_new_tokens, or on_token returning false. Greedy selection comes from the
// plan's candidate slots; with temperature > 0 the sampler draws from the full logits,
// with the token's position as the draw counter (reproducible for a given seed).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "host/error.h"
#include "host/executor.h"
#include "host/package.h"

namespace tileinfer {

class KvHistory;

// Steps positions first_pos.. of the prompt (first_pos: FirstPromptPosition), then new tokens,
// for a request that passed CheckGenerateRequest (GenerateFromKeptRows checks it first).
// Throws Error for first_pos outside the prompt or a non-finite logit.
GenerateResult GenerateBySteps(Executor& exec, const Package& pkg, const std::vector<int>& prompt,
                              const GenerateOptions& options, int first_pos);

// The first prompt position a request must run: 0, or with options.reuse_kv_cache the number of
// leading prompt tokens whose rows `kv` holds, at most prompt.size() - 1 (the last prompt
// position runs again for its logits, rewriting its row with the same bits).
int FirstPromptPosition(const KvHistory& kv, const std::vector<int>& prompt, const GenerateOptions& options);

// An executor's Generate around its own loop: first CheckGenerateRequest (a refused request
// changes nothing, so the rows stay for the next one), then returns run(FirstPromptPosition(kv,
// prompt, options)); after an error of `run` it forgets every row of `kv`, so that the next
// request starts at position 0 (a non-finite logit leaves the executor's out-of-range-residual
// mark set until position 0 runs, and it may come from a position the next prompt shares).
// Rethrows the error.
GenerateResult GenerateFromKeptRows(const Package& pkg, KvHistory& kv, const std::vector<int>& prompt,
                                    const GenerateOptions& options,
                                    const std::function<GenerateResult(int first_pos)>& run);

// "1,2,3" -> {1, 2, 3}; an empty string gives {}. Throws Error naming `what` (e.g. the flag)
// when an item is not an integer.
std::vector<int> ParseIntList(const std::string& text, const std::string& what);

// The error of a request stopped by a non-finite logit at position `pos`, after `emitted` tokens
// (streamed to the caller already; none for `pos`).
Error NonFiniteLogitError(int pos, size_t emitted);

// Throws Error "<what> <id> is outside the vocabulary (0..V-1)" for an id outside the
// package model's vocabulary (what: e.g. "token id", "prompt token id").
void CheckTokenId(const Package& pkg, int id, const std::string& what);

// The checks of Executor::Step (and the GPU's forced windows): throws Error when `token` is
// outside the vocabulary or `pos` outside [0, max context).
void CheckStep(const Package& pkg, int token, int pos);

// Which positions' K/V cache rows belong to the sequence an executor is stepping. A step at
// position pos attends over the rows of positions [0, pos], so it may run only when the rows
// [0, pos) hold this sequence: Executor::Step at a position greater than the number of rows
// held (one that skips a position) would read rows no step wrote (silently wrong logits).
// Position 0 starts a new request: every row is dropped (the executors clear the request's
// out-of-range-residual mark there too). At a later position, rewriting it with a different
// token makes the rows after it stale; rewriting it with the token it holds writes the same bits
// (the executors are deterministic), so the rows after it stay (the benchmark's windows re-run
// positions this way). One rule for the CPU and GPU executors.
class KvHistory {
 public:
  // Before a run of tokens[0..n) at positions start..start + n - 1: throws Error (naming the
  // skipped positions and what to do) when start is greater than held(); drops every row when
  // start is 0, else the rows from the first position whose token differs.
  void Begin(int start, const int* tokens, int n);
  // After that run succeeded (or after the part of it that surely ran): the rows of
  // start..start + n - 1 hold tokens[0..n) (a differing token there drops the rows after it).
  void Done(int start, const int* tokens, int n);
  // Forgets the rows of positions from `pos` on (a run will feed them tokens not known yet).
  void DropFrom(int pos) {
    if (pos < held()) tokens_.resize(pos);
  }
  // Positions [0, held()) hold rows of the current sequence.
  int held() const { return static_cast<int>(tokens_.size()); }
  // The number of leading `tokens` whose positions hold rows of those same tokens: a request
  // for `tokens` may keep those rows (GenerateOptions::reuse_kv_cache).
  int SharedPrefix(const std::vector<int>& tokens) const;

 private:
  std::vector<int> tokens_;  // tokens_[p]: the token whose K/V row position p holds
};

// The tokens a GPU launch fed to its first `ran` steps (cuda/worker.cu's step loop): step s < the
// number of forced tokens takes forced[s]; a later step takes the token step s - 1 chose, which is
// chosen[s - 1 - first_logits_step] (the launch's recorded tokens, one per step from
// first_logits_step on); a later step before first_logits_step takes its predecessor's token
// again. forced holds at least one token. Throws Error when a step needs a chosen token past
// `chosen`.
std::vector<int> FedTokens(const std::vector<int32_t>& forced, int first_logits_step,
                           const std::vector<int32_t>& chosen, int ran);

// The checks of `options` that depend on no prompt or package: max_new_tokens at least 1,
// and CheckSamplingOptions. Throws Error.
void CheckGenerateOptions(const GenerateOptions& options);

// The checks every executor makes before generating (same errors as above), those of
// CheckGenerateOptions among them.
void CheckGenerateRequest(const Package& pkg, const std::vector<int>& prompt, const GenerateOptions& options);

}  // namespace tileinfer
