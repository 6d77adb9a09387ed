// The package's tokenizer (the "tokenizer" JSON section): byte-level BPE, as GPT-2, SmolLM2
// and Llama 3 use. For now, decoding ids to text.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

namespace tileinfer {

class Tokenizer {
 public:
  // Parses the section written by py/planner/tokenizer_spec.py. Throws Error if malformed.
  static Tokenizer FromJson(const std::string& text);

  // UTF-8 text of `ids` (byte-level symbols mapped back to bytes; special tokens verbatim).
  // Ids outside the vocabulary throw Error.
  std::string Decode(const std::vector<int>& ids) const;
  int vocab_size() const { return static_cast<int>(vocab_.size()); }

 private:
  std::vector<std::string> vocab_;                   // id -> token string
  std::unordered_map<int, std::string> special_;     // id -> content, emitted verbatim
  std::unordered_map<uint32_t, uint8_t> unicode_to_byte_;
};

}  // namespace tileinfer
