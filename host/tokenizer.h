// The package's tokenizer (the "tokenizer" JSON section written by
// py/planner/tokenizer_spec.py): byte-level BPE, as GPT-2, SmolLM2 and Llama 3 use. Encodes
// text to the ids Hugging Face `tokenizers` gives, and decodes ids to text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tileinfer {

// Offset of the first byte of `text` that is not valid UTF-8 (ICU's check: no overlong forms,
// surrogates or code points past U+10FFFF), or std::string::npos. Throws Error for a text over
// 2 GiB.
size_t InvalidUtf8At(const std::string& text);

// `text` with each ill-formed UTF-8 sequence (ICU's maximal subparts, as InvalidUtf8At finds them)
// replaced by U+FFFD, as Python's bytes.decode("utf-8", "replace") and HF's decode do: e.g. a
// generated text that ends inside a character, made fit for Tokenizer::Encode again. Throws
// Error for a text over 2 GiB.
std::string ReplaceInvalidUtf8(const std::string& text);

class Tokenizer {
 public:
  // Parses the section and compiles its pre-tokenizer patterns (ICU). Throws Error if the
  // section is malformed, a merge names a token outside the vocabulary, or a pattern does
  // not compile. An empty object, the planner's section for a checkpoint without
  // tokenizer.json, gives a tokenizer with no vocabulary: Encode throws, Decode of any id too.
  static Tokenizer FromJson(const std::string& text);
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Ids of UTF-8 `text`, without BOS (see add_bos()). As HF `tokenizers`:
  //  1. added tokens are cut out verbatim, leftmost-longest; special ones only when
  //     `parse_special` (false: their text is encoded like any other, as HF's
  //     encode_special_tokens=True);
  //  2. each remaining chunk is split by each pre-tokenizer pattern in turn, keeping matches
  //     and the gaps between them (HF Split "Isolated");
  //  3. each piece's bytes become GPT-2 byte symbols; with ignore_merges a piece found whole
  //     in the vocabulary is one id; otherwise BPE merges the adjacent pair of lowest rank
  //     (leftmost first) until none applies.
  // Throws Error for invalid UTF-8 or a byte with no token (possible only in toy vocabularies).
  std::vector<int> Encode(const std::string& text, bool parse_special = true) const;

  // UTF-8 text of `ids` (byte-level symbols mapped back to bytes; added and special tokens
  // verbatim). Ids outside the vocabulary throw Error.
  std::string Decode(const std::vector<int>& ids) const;

  int vocab_size() const { return static_cast<int>(vocab_.size()); }
  int bos_id() const { return bos_id_; }      // -1: none
  bool add_bos() const { return add_bos_; }   // whether a prompt starts with bos_id()

 private:
  struct Merge {
    int rank;
    int new_id;
  };
  struct Patterns;  // the compiled ICU regexes (kept out of this header)

  Tokenizer();
  void Bpe(const std::string& text, size_t begin, size_t end, std::vector<int>& out) const;
  void PreTokenize(const std::string& text, size_t begin, size_t end, std::vector<int>& out) const;

  std::vector<std::string> vocab_;                   // id -> token string
  std::unordered_map<int, std::string> verbatim_;    // added/special id -> content
  std::unordered_map<int, bool> is_special_;         // added id -> marked special
  // Added tokens by first byte, longest first, for leftmost-longest matching.
  std::vector<std::vector<int>> verbatim_by_byte_;
  std::unordered_map<std::string, int> token_id_;    // byte-level token -> id (BPE vocabulary)
  std::unordered_map<uint64_t, Merge> merges_;       // (left id << 32 | right id) -> merge
  int byte_id_[256];                                 // byte -> id of its symbol, -1 if none
  std::string byte_symbol_[256];                     // byte -> its GPT-2 symbol (UTF-8)
  std::unordered_map<uint32_t, uint8_t> unicode_to_byte_;
  std::unique_ptr<Patterns> patterns_;
  bool ignore_merges_ = false;
  bool add_bos_ = false;
  int bos_id_ = -1;
};

// A pre-tokenizer pattern for ICU with the Unicode of HF `tokenizers`: each \p{X} (\P{X})
// whose X names a general category or group of them (Lo, L, LC, N, C, ...; long names such as
// Letter and "gc=" forms too) widened by the code points X gained, and narrowed by those it lost,
// between the system ICU's Unicode and that of `tokenizers` (host/unicode_delta.h: Debian 12's
// ICU 72 has Unicode 15.0, tokenizers 0.23 has 16.0; an ICU with 16.0 already holds them, and
// the widened set is the same). Left as they are: script properties (\p{Han}), \d, \w and
// other escapes, \Q...\E quotes, and a \p{X} right after '-' (a range bound, which ICU
// refuses either way). E.g. "\p{L}+" -> "[\p{L}\x{1C89}-\x{1C8A}...]+".
std::string WithUnicodeDelta(const std::string& pattern);

}  // namespace tileinfer
