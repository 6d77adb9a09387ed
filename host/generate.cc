#include "host/generate.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "host/error.h"

namespace tileinfer {

std::vector<int> ParseIntList(const std::string& text, const std::string& what) {
  std::vector<int> out;
  if (text.empty()) return out;
  for (size_t at = 0;;) {  // every item, the empty ones of "1,,2" or "1,2," too
    const size_t comma = std::min(text.find(',', at), text.size());
    std::string item = text.substr(at, comma - at);
    const char* const blank = " \t\r\n";  // blanks around an item are fine: "1, 2", a pasted column
    item.erase(0, item.find_first_not_of(blank));
    item.erase(item.find_last_not_of(blank) + 1);
    const size_t digits = item.size() - (!item.empty() && item[0] == '-');
    if (digits == 0 || item.find_first_not_of("0123456789", item.size() - digits) != std::string::npos) {
      throw Error(what + ": '" + item + "' is not an integer; give comma-separated integers, "
                  "no empty items");
    }
    int value = 0;
    try {
      value = std::stoi(item);
    } catch (const std::out_of_range&) {
      throw Error(what + ": '" + item + "' is outside the range of a 32-bit int");
    }
    out.push_back(value);
    if (comma == text.size()) return out;
    at = comma + 1;
  }
}

Error NonFiniteLogitError(int pos, size_t emitted) {
  const std::string stopped =
      emitted == 0 ? "the request stopped; no token was emitted"
                   : "the request stopped after " + std::to_string(emitted) +
                         (emitted == 1 ? " token was" : " tokens were") + " emitted, with none for this position";
  return Error("non-finite logit at position " + std::to_string(pos) + ": " + stopped +
               " (the checkpoint may hold inf/NaN weights, or an activation outgrew the residual "
               "stream's fixed-point range of +-2^21: check its weights)");
}

void CheckTokenId(const Package& pkg, int id, const std::string& what) {
  if (id < 0 || id >= pkg.model().vocab) {
    throw Error(what + " " + std::to_string(id) + " is outside the vocabulary (0.." +
                std::to_string(pkg.model().vocab - 1) + ")");
  }
}

void CheckStep(const Package& pkg, int token, int pos) {
  CheckTokenId(pkg, token, "token id");
  if (pos < 0) throw Error("position " + std::to_string(pos) + " is negative: positions count from 0");
  if (pos >= pkg.plan().max_context) {
    throw Error("position " + std::to_string(pos) + " is beyond the package's max context " +
                std::to_string(pkg.plan().max_context) + ": re-plan with a larger --max_context");
  }
}

void KvHistory::Begin(int start, const int* tokens, int n) {
  const int next = held();
  if (start > next) {
    throw Error("position " + std::to_string(start) + " skips position" + (start - next > 1 ? "s " : " ") +
                std::to_string(next) + (start - next > 1 ? "-" + std::to_string(start - 1) : "") +
                ", which attention there would read: step positions in order from 0 (" + std::to_string(next) +
                " continues; an earlier one goes back, and 0 starts a new request)");
  }
  if (start == 0) {  // a new request
    tokens_.clear();
    return;
  }
  for (int i = 0; i < n && start + i < next; ++i) {
    if (tokens_[start + i] != tokens[i]) {
      tokens_.resize(start + i);
      break;
    }
  }
}

int KvHistory::SharedPrefix(const std::vector<int>& tokens) const {
  const size_t n = std::min(tokens_.size(), tokens.size());
  size_t i = 0;
  while (i < n && tokens_[i] == tokens[i]) ++i;
  return static_cast<int>(i);
}

int FirstPromptPosition(const KvHistory& kv, const std::vector<int>& prompt, const GenerateOptions& options) {
  if (!options.reuse_kv_cache || prompt.empty()) return 0;
  return std::min(kv.SharedPrefix(prompt), static_cast<int>(prompt.size()) - 1);
}

GenerateResult GenerateFromKeptRows(const Package& pkg, KvHistory& kv, const std::vector<int>& prompt,
                                    const GenerateOptions& options,
                                    const std::function<GenerateResult(int first_pos)>& run) {
  CheckGenerateRequest(pkg, prompt, options);  // outside the try: a refused request keeps the rows
  try {
    return run(FirstPromptPosition(kv, prompt, options));
  } catch (...) {
    kv.DropFrom(0);
    throw;
  }
}

void KvHistory::Done(int start, const int* tokens, int n) {
  if (start > held()) throw Error("KvHistory::Done: position " + std::to_string(start) + " was not begun");
  for (int i = 0; i < n; ++i) {
    if (start + i < held() && tokens_[start + i] != tokens[i]) tokens_.resize(start + i);  // stale after it
    if (start + i == held()) tokens_.push_back(tokens[i]);
  }
}

std::vector<int> FedTokens(const std::vector<int32_t>& forced, int first_logits_step,
                           const std::vector<int32_t>& chosen, int ran) {
  if (forced.empty()) throw Error("FedTokens: a launch forces at least its first step's token");
  std::vector<int> fed(std::max(ran, 0));
  for (int s = 0; s < ran; ++s) {
    const int k = s - 1 - first_logits_step;
    if (s < static_cast<int>(forced.size())) {
      fed[s] = forced[s];
    } else if (k < 0) {
      fed[s] = fed[s - 1];
    } else if (k < static_cast<int>(chosen.size())) {
      fed[s] = chosen[k];
    } else {
      throw Error("FedTokens: step " + std::to_string(s) + " was fed a token the launch did not record");
    }
  }
  return fed;
}

void CheckGenerateOptions(const GenerateOptions& options) {
  if (options.max_new_tokens < 1) throw Error("max_new_tokens must be at least 1");
  CheckSamplingOptions(options.sampling);
}

void CheckGenerateRequest(const Package& pkg, const std::vector<int>& prompt, const GenerateOptions& options) {
  const int max_context = pkg.plan().max_context;
  if (prompt.empty()) throw Error("the prompt is empty: give at least one token id (e.g. BOS)");
  for (int id : prompt) CheckTokenId(pkg, id, "prompt token id");
  CheckGenerateOptions(options);
  if (static_cast<int64_t>(prompt.size()) + options.max_new_tokens > max_context) {
    throw Error("prompt (" + std::to_string(prompt.size()) + " tokens) + max_new_tokens (" +
                std::to_string(options.max_new_tokens) + ") exceeds the package's max context " +
                std::to_string(max_context) + ": shorten them, or re-plan with a larger --max_context");
  }
}

GenerateResult GenerateBySteps(Executor& exec, const Package& pkg, const std::vector<int>& prompt,
                              const GenerateOptions& options, int first_pos) {
  if (first_pos < 0 || first_pos >= static_cast<int>(prompt.size())) {
    throw Error("GenerateBySteps: first_pos " + std::to_string(first_pos) + " is outside the prompt");
  }
  const auto& stops = pkg.stop_token_ids();
  GenerateResult result;
  result.prompt_reused = first_pos;
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  int pos = first_pos;
  for (; pos + 1 < static_cast<int>(prompt.size()); ++pos) exec.Step(prompt[pos], pos, false);
  exec.Step(prompt[pos], pos, true);
  auto t1 = Clock::now();
  result.prompt_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  for (;;) {
    const int32_t next = options.sampling.temperature == 0.0f
                             ? exec.Select()
                             : SampleToken(exec.Logits(), options.sampling, static_cast<uint64_t>(pos));
    if (next == format::kCandidateNonFinite) {
      throw NonFiniteLogitError(pos, result.tokens.size());
    }
    result.tokens.push_back(next);
    const bool go_on = !options.on_token || options.on_token(next);
    if (options.stop_at_eos && std::find(stops.begin(), stops.end(), next) != stops.end()) {
      result.stopped_at_eos = true;
      break;
    }
    if (!go_on || static_cast<int>(result.tokens.size()) >= options.max_new_tokens) break;
    ++pos;
    exec.Step(next, pos, true);
  }
  result.decode_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  return result;
}

}  // namespace tileinfer
