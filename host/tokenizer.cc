#include "host/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>
#include <unicode/regex.h>
#include <unicode/utext.h>
#include <unicode/utf8.h>
#include <unicode/uvernum.h>

#include "host/error.h"
#include "host/unicode_delta.h"

namespace tileinfer {

struct Tokenizer::Patterns {
  std::vector<std::unique_ptr<icu::RegexPattern>> compiled;
  std::vector<std::string> source;  // as the package gives them, for messages
};

namespace {

// ICU's time limit of the matches in one piece of text (RegexMatcher::setTimeLimit, in its
// steps; ~1 s here): far above what a real pattern needs on the longest text a context holds
// (a 100,000-byte word splits in ~0.5 s, 8 MB of text in ~1.5 s), and a bound where a pattern
// backtracks without end.
constexpr int32_t kRegexTimeLimit = 5000;
// ICU's backtracking stack for one match (RegexMatcher::setStackLimit, bytes; ICU's default 8 MB
// overflowed on Llama 3's pattern at ~400,000 characters of whitespace, which HF tokenizers splits).
constexpr int32_t kRegexStackBytes = 64 << 20;

// GPT-2's byte-to-symbol table: printable bytes stand for themselves, the other 68 bytes
// are shifted to code points 256.. so that every byte is a visible character.
std::vector<uint32_t> ByteToCodePoint() {
  std::vector<uint32_t> table(256);
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    table[b] = printable ? b : next++;
  }
  return table;
}

std::string Utf8(uint32_t cp) {
  char buf[U8_MAX_LENGTH];
  int32_t n = 0;
  U8_APPEND_UNSAFE(buf, n, cp);
  return std::string(buf, n);
}

// Decodes one UTF-8 sequence at s[i]; advances i. Invalid bytes decode as themselves.
uint32_t NextCodePoint(const std::string& s, size_t& i) {
  const unsigned char c = s[i];
  int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (i + len > s.size()) len = 1;
  uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += len;
  return cp;
}

// A \p{...} property name as ICU compares it (case, spaces, '_' and '-' ignored; "gc=" and
// "General_Category=" prefixes dropped), as the short name of its general category (or group of
// them), e.g. "Letter" -> "L", "lu" -> "Lu"; empty for anything else (scripts, binary properties).
std::string GeneralCategory(const std::string& name) {
  std::string loose;
  for (char ch : name) {
    if (ch != ' ' && ch != '_' && ch != '-') loose += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  for (const char* prefix : {"gc=", "generalcategory="}) {
    if (loose.rfind(prefix, 0) == 0) loose.erase(0, std::strlen(prefix));
  }
  static const char* const kNames[][2] = {
      {"letter", "L"}, {"casedletter", "LC"}, {"uppercaseletter", "Lu"}, {"lowercaseletter", "Ll"},
      {"titlecaseletter", "Lt"}, {"modifierletter", "Lm"}, {"otherletter", "Lo"}, {"mark", "M"},
      {"nonspacingmark", "Mn"}, {"spacingmark", "Mc"}, {"enclosingmark", "Me"}, {"number", "N"},
      {"decimalnumber", "Nd"}, {"letternumber", "Nl"}, {"othernumber", "No"}, {"punctuation", "P"},
      {"connectorpunctuation", "Pc"}, {"dashpunctuation", "Pd"}, {"openpunctuation", "Ps"},
      {"closepunctuation", "Pe"}, {"initialpunctuation", "Pi"}, {"finalpunctuation", "Pf"},
      {"otherpunctuation", "Po"}, {"symbol", "S"}, {"mathsymbol", "Sm"}, {"currencysymbol", "Sc"},
      {"modifiersymbol", "Sk"}, {"othersymbol", "So"}, {"separator", "Z"}, {"spaceseparator", "Zs"},
      {"lineseparator", "Zl"}, {"paragraphseparator", "Zp"}, {"other", "C"}, {"control", "Cc"},
      {"format", "Cf"}, {"surrogate", "Cs"}, {"privateuse", "Co"}, {"unassigned", "Cn"}};
  for (const auto& [long_name, short_name] : kNames) {
    std::string short_loose = short_name;
    for (char& ch : short_loose) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (loose == long_name || loose == short_loose) return short_name;
  }
  return "";
}

// Walks `text` one UTF-8 sequence at a time, as ICU's U8_NEXT splits it (an ill-formed one is
// its maximal subpart): on(start, end, ok) for each, until it returns false. Throws Error "text
// to <what> is over 2 GiB" for a text longer than ICU's int32 offsets reach.
template <typename OnSequence>
void ForEachUtf8Sequence(const std::string& text, const char* what, OnSequence on) {
  if (text.size() > static_cast<size_t>(INT32_MAX)) throw Error(std::string("text to ") + what + " is over 2 GiB");
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const int32_t n = static_cast<int32_t>(text.size());
  for (int32_t i = 0; i < n;) {
    const int32_t start = i;
    UChar32 c;
    U8_NEXT(s, i, n, c);
    if (!on(static_cast<size_t>(start), static_cast<size_t>(i), c >= 0)) return;
  }
}

}  // namespace

size_t InvalidUtf8At(const std::string& text) {
  size_t bad = std::string::npos;
  ForEachUtf8Sequence(text, "encode", [&](size_t start, size_t, bool ok) {
    if (!ok) bad = start;
    return ok;
  });
  return bad;
}

std::string ReplaceInvalidUtf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  ForEachUtf8Sequence(text, "decode", [&](size_t start, size_t end, bool ok) {
    if (ok) {
      out.append(text, start, end - start);
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
    }
    return true;
  });
  return out;
}

Tokenizer::Tokenizer() : patterns_(std::make_unique<Patterns>()) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::FromJson(const std::string& text) {
  Tokenizer tok;
  std::vector<std::string> merges, regexes;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.is_object() && j.empty()) return tok;  // the planner's section for a checkpoint without one
    tok.vocab_ = j.at("vocab").get<std::vector<std::string>>();
    for (const char* field : {"special_tokens", "added_tokens"}) {
      if (!j.contains(field)) continue;
      for (const auto& [id, content] : j.at(field).items()) {
        const int i = std::stoi(id);
        tok.verbatim_[i] = content.get<std::string>();
        tok.is_special_[i] = std::string(field) == "special_tokens";
      }
    }
    merges = j.at("merges").get<std::vector<std::string>>();
    regexes = j.at("pre_tokenizer_regexes").get<std::vector<std::string>>();
    tok.ignore_merges_ = j.at("ignore_merges").get<bool>();
    tok.add_bos_ = j.value("add_bos", false);
    if (j.contains("bos_id") && !j.at("bos_id").is_null()) {
      const int64_t bos = j.at("bos_id").get<int64_t>();  // get<int> would wrap a larger value
      if (bos < 0 || bos > std::numeric_limits<int>::max()) {
        throw std::out_of_range("bos_id " + std::to_string(bos) + " is not a token id");
      }
      tok.bos_id_ = static_cast<int>(bos);
    }
  } catch (const std::exception& e) {
    throw Error(std::string("the package's tokenizer section is malformed (") + e.what() +
                "): re-run the planner");
  }
  const int n = tok.vocab_size();
  for (const auto& [id, content] : tok.verbatim_) {
    if (id < 0 || id >= n) {
      throw Error("tokenizer: added token id " + std::to_string(id) + " is outside the vocabulary of " +
                  std::to_string(n) + ": re-run the planner");
    }
  }
  if (tok.add_bos_ && (tok.bos_id_ < 0 || tok.bos_id_ >= n)) {
    throw Error("tokenizer: add_bos is set but bos_id " + std::to_string(tok.bos_id_) +
                " is not a token: re-run the planner");
  }

  // BPE looks tokens up in the model's vocabulary: an added token's text only where no
  // model token has the same text (as HF, whose BPE model never sees added tokens).
  for (int i = 0; i < n; ++i) {
    if (!tok.verbatim_.count(i)) tok.token_id_.emplace(tok.vocab_[i], i);
  }
  for (const auto& [id, content] : tok.verbatim_) tok.token_id_.emplace(content, id);

  const std::vector<uint32_t> code_points = ByteToCodePoint();
  for (int b = 0; b < 256; ++b) {
    tok.unicode_to_byte_[code_points[b]] = static_cast<uint8_t>(b);
    tok.byte_symbol_[b] = Utf8(code_points[b]);
    auto it = tok.token_id_.find(tok.byte_symbol_[b]);
    tok.byte_id_[b] = it == tok.token_id_.end() ? -1 : it->second;
  }

  // Rank = position in the list; a repeated pair keeps its last rank (as HF's map does).
  tok.merges_.reserve(merges.size());
  auto id_of = [&](const std::string& token, const std::string& merge) {
    auto it = tok.token_id_.find(token);
    if (it == tok.token_id_.end()) {
      throw Error("tokenizer: merge '" + merge + "' uses '" + token +
                  "', which is not in the vocabulary: re-run the planner");
    }
    return it->second;
  };
  for (size_t r = 0; r < merges.size(); ++r) {
    const std::string& m = merges[r];
    const size_t space = m.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == m.size() ||
        m.find(' ', space + 1) != std::string::npos) {
      throw Error("tokenizer: merge '" + m + "' is not two tokens: re-run the planner");
    }
    const std::string left = m.substr(0, space), right = m.substr(space + 1);
    const uint64_t key = (static_cast<uint64_t>(id_of(left, m)) << 32) | static_cast<uint32_t>(id_of(right, m));
    tok.merges_[key] = Merge{static_cast<int>(r), id_of(left + right, m)};
  }

  // Added tokens by first byte, longest first: the first that matches at a position is the
  // longest there.
  tok.verbatim_by_byte_.assign(256, {});
  for (const auto& [id, content] : tok.verbatim_) {
    if (!content.empty()) tok.verbatim_by_byte_[static_cast<uint8_t>(content[0])].push_back(id);
  }
  for (auto& ids : tok.verbatim_by_byte_) {
    std::sort(ids.begin(), ids.end(), [&](int a, int b) {
      const size_t la = tok.verbatim_[a].size(), lb = tok.verbatim_[b].size();
      return la != lb ? la > lb : a < b;
    });
  }

  for (const std::string& source : regexes) {
    UErrorCode status = U_ZERO_ERROR;
    UParseError where;
    const std::string widened = WithUnicodeDelta(source);
    std::unique_ptr<icu::RegexPattern> p(
        icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(widened), 0, where, status));
    if (U_FAILURE(status)) {
      const std::string form =
          widened == source ? "" : " of its form for Unicode " + std::string(unicode_delta::kTo) + ", '" + widened + "'";
      throw Error("tokenizer: pre-tokenizer pattern '" + source + "' does not compile with ICU (" +
                  u_errorName(status) + " at offset " + std::to_string(where.offset) + form + ")");
    }
    tok.patterns_->compiled.push_back(std::move(p));
    tok.patterns_->source.push_back(source);
  }
  return tok;
}

// The delta starts at Unicode 15.0, ICU 72's (Debian 12); an older ICU would lack more of it.
static_assert(U_ICU_VERSION_MAJOR_NUM >= 72,
              "host/unicode_delta.h widens Unicode 15.0 (ICU 72) to 16.0: with an older ICU, regenerate it "
              "from that ICU's Unicode (py/tools/gen_unicode_delta.py)");

std::string WithUnicodeDelta(const std::string& pattern) {
  auto code_point = [](uint32_t cp) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "\\x{%X}", cp);
    return std::string(buf);
  };
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char kind = pattern[i + 1];
    if (kind == 'Q') {  // \Q...\E quotes its text: copied as it is, to the \E or the end
      const size_t quote_end = pattern.find("\\E", i + 2);
      const size_t stop = quote_end == std::string::npos ? pattern.size() : quote_end + 2;
      out += pattern.substr(i, stop - i);
      i = stop - 1;
      continue;
    }
    const size_t close = pattern.find('}', i + 2);
    // Not after a '-': in a set, "x-\p{L}" is a range ICU refuses, and a set in its place would
    // make it valid.
    const bool after_dash = i > 0 && pattern[i - 1] == '-';
    if ((kind == 'p' || kind == 'P') && i + 2 < pattern.size() && pattern[i + 2] == '{' &&
        close != std::string::npos && !after_dash) {
      const std::string name = pattern.substr(i + 3, close - (i + 3));
      const std::string category = GeneralCategory(name);
      std::string gained, lost;
      for (const unicode_delta::Run& run : unicode_delta::kRuns) {
        if (category != run.name) continue;
        std::string& to = run.gained ? gained : lost;
        to += code_point(run.first);
        if (run.last != run.first) to += "-" + code_point(run.last);
      }
      if (!gained.empty() || !lost.empty()) {
        std::string set = "[\\p{" + name + "}" + gained + "]";
        if (!lost.empty()) set = "[" + set + "--[" + lost + "]]";
        out += kind == 'p' ? set : "[^" + set + "]";
        i = close;
        continue;
      }
    }
    out += pattern.substr(i, 2);  // any other escape (\\, \{, \s, ...) as it is
    ++i;
  }
  return out;
}

std::vector<int> Tokenizer::Encode(const std::string& text, bool parse_special) const {
  if (vocab_.empty()) {
    throw Error("this package has no tokenizer (its checkpoint had no tokenizer.json): give the "
                "prompt as token ids, or re-plan from a checkpoint with its tokenizer.json");
  }
  const size_t bad = InvalidUtf8At(text);
  if (bad != std::string::npos) {
    throw Error("text to encode is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  }
  std::vector<int> out;
  size_t chunk = 0;  // start of the text not yet encoded
  for (size_t i = 0; i < text.size();) {
    int match = -1;
    for (int id : verbatim_by_byte_[static_cast<uint8_t>(text[i])]) {
      const std::string& content = verbatim_.at(id);
      if (text.compare(i, content.size(), content) == 0) {
        match = id;
        break;
      }
    }
    if (match < 0) {
      ++i;
      continue;
    }
    const size_t len = verbatim_.at(match).size();
    // HF finds special tokens even when it does not parse them, and then encodes their text
    // as ordinary text; so their span is skipped, not searched again for other tokens.
    if (is_special_.at(match) && !parse_special) {
      i += len;
      continue;
    }
    PreTokenize(text, chunk, i, out);
    out.push_back(match);
    i += len;
    chunk = i;
  }
  PreTokenize(text, chunk, text.size(), out);
  return out;
}

// Splits text[begin, end) with each pattern in turn (matches and the gaps between them are
// pieces; a pattern sees one piece at a time, so a lookahead stops at the piece's end) and
// appends each piece's BPE ids.
void Tokenizer::PreTokenize(const std::string& text, size_t begin, size_t end,
                            std::vector<int>& out) const {
  if (begin >= end) return;
  std::vector<std::pair<int64_t, int64_t>> pieces = {{static_cast<int64_t>(begin), static_cast<int64_t>(end)}};
  if (!patterns_->compiled.empty()) {
    UErrorCode status = U_ZERO_ERROR;
    UText input = UTEXT_INITIALIZER;
    utext_openUTF8(&input, text.data(), static_cast<int64_t>(text.size()), &status);
    std::vector<std::pair<int64_t, int64_t>> next;
    for (size_t p = 0; p < patterns_->compiled.size() && U_SUCCESS(status); ++p) {
      std::unique_ptr<icu::RegexMatcher> m(patterns_->compiled[p]->matcher(status));
      if (U_FAILURE(status)) break;
      // A pattern that backtracks without end on some text (e.g. "(a|a)+$") would hang the
      // request: the matches in one piece (ICU restarts the count at each region) may take
      // kRegexTimeLimit of ICU's steps (its docs: "on the order of milliseconds" each), then
      // fail with U_REGEX_TIME_OUT.
      m->setTimeLimit(kRegexTimeLimit, status);
      m->setStackLimit(kRegexStackBytes, status);
      m->reset(&input);
      next.clear();
      for (const auto& [b, e] : pieces) {
        m->region(b, e, status);  // opaque bounds (the default): nothing outside is seen
        int64_t pos = b;
        while (U_SUCCESS(status) && m->find(status)) {
          const int64_t s = m->start64(status), t = m->end64(status);
          if (s > pos) next.emplace_back(pos, s);
          if (t > s) next.emplace_back(s, t);
          pos = t;
        }
        if (U_FAILURE(status)) break;
        if (pos < e) next.emplace_back(pos, e);
      }
      if (U_FAILURE(status)) {
        utext_close(&input);
        if (status == U_REGEX_TIME_OUT || status == U_REGEX_STACK_OVERFLOW) {
          throw Error("tokenizer: pre-tokenizer pattern '" + patterns_->source[p] + "' ran past its " +
                      (status == U_REGEX_TIME_OUT ? "time" : "stack") +
                      " limit on this text: a pattern that backtracks without end, or a text far "
                      "longer than a context holds (seen from a few million characters between "
                      "special tokens): shorten the text, fix the package's tokenizer, or pass token "
                      "ids (--prompt_ids)");
        }
        throw Error("tokenizer: pre-tokenizer pattern '" + patterns_->source[p] + "' failed in ICU (" +
                    u_errorName(status) + ")");
      }
      pieces.swap(next);
    }
    utext_close(&input);
    if (U_FAILURE(status)) throw Error(std::string("tokenizer: ICU failed (") + u_errorName(status) + ")");
  }
  for (const auto& [b, e] : pieces) Bpe(text, static_cast<size_t>(b), static_cast<size_t>(e), out);
}

// HF `tokenizers` BPE (models/bpe/word.rs merge_all): a min-heap of candidate merges by
// (rank, position); an entry whose pair has since changed is dropped when popped.
void Tokenizer::Bpe(const std::string& text, size_t begin, size_t end, std::vector<int>& out) const {
  if (begin >= end) return;
  if (ignore_merges_) {
    std::string word;
    for (size_t i = begin; i < end; ++i) word += byte_symbol_[static_cast<uint8_t>(text[i])];
    auto whole = token_id_.find(word);
    if (whole != token_id_.end()) {
      out.push_back(whole->second);
      return;
    }
  }
  struct Symbol {
    int id, prev, next;
    bool alive;
  };
  const int n = static_cast<int>(end - begin);
  std::vector<Symbol> sym(n);
  for (int k = 0; k < n; ++k) {
    const uint8_t byte = static_cast<uint8_t>(text[begin + k]);
    if (byte_id_[byte] < 0) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", byte);
      throw Error("tokenizer: byte " + std::to_string(byte) + " (" + hex +
                  ") of the text has no token in this vocabulary (Hugging Face tokenizers would drop it "
                  "without a word): leave that character out of the text, or give the prompt as token ids");
    }
    sym[k] = Symbol{byte_id_[byte], k - 1, k + 1 < n ? k + 1 : -1, true};
  }
  struct Candidate {
    int rank, pos, new_id;
  };
  // std heaps put the greatest first: "greater" is the higher rank, then the later position.
  auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  auto merge_of = [&](int left, int right) -> const Merge* {
    auto it = merges_.find((static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right));
    return it == merges_.end() ? nullptr : &it->second;
  };
  std::vector<Candidate> heap;
  for (int k = 0; k + 1 < n; ++k) {
    if (const Merge* m = merge_of(sym[k].id, sym[k + 1].id)) heap.push_back({m->rank, k, m->new_id});
  }
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = sym[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = sym[left.next];
    const Merge* m = merge_of(left.id, right.id);
    if (m == nullptr || m->new_id != top.new_id) continue;  // stale: the pair has changed
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) sym[left.next].prev = top.pos;
    if (left.prev >= 0) {
      if (const Merge* p = merge_of(sym[left.prev].id, left.id)) {
        heap.push_back({p->rank, left.prev, p->new_id});
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
    if (left.next >= 0) {
      if (const Merge* q = merge_of(left.id, sym[left.next].id)) {
        heap.push_back({q->rank, top.pos, q->new_id});
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
  }
  for (int k = 0; k >= 0; k = sym[k].next) out.push_back(sym[k].id);
}

std::string Tokenizer::Decode(const std::vector<int>& ids) const {
  std::string out;
  for (int id : ids) {
    if (id < 0 || id >= vocab_size()) {
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " +
                  std::to_string(vocab_size()));
    }
    auto verbatim = verbatim_.find(id);
    if (verbatim != verbatim_.end()) {
      out += verbatim->second;
      continue;
    }
    const std::string& piece = vocab_[id];
    for (size_t i = 0; i < piece.size();) {
      const uint32_t cp = NextCodePoint(piece, i);
      auto byte = unicode_to_byte_.find(cp);
      if (byte != unicode_to_byte_.end()) out += static_cast<char>(byte->second);
    }
  }
  return out;
}

}  // namespace tileinfer
