// The tokenizer on hand-made vocabularies, where the right ids follow from the rules (merge
// rank, leftmost first, ignore_merges, leftmost-longest added tokens, the pre-tokenizer
// patterns), and on a golden package's tokenizer. Equality with HF `tokenizers` on the real
// SmolLM2 and Llama 3 vocabularies is checked by tests/tokenizer_test.py.
#include "host/tokenizer.h"

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "host/error.h"
#include "host/package.h"
#include "tests/golden/golden_path.h"

namespace tileinfer {
namespace {

using Ids = std::vector<int>;

// HF's ByteLevel pattern, as py/planner/tokenizer_spec.py records it.
const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// GPT-2's symbol for `byte` (UTF-8), written out independently of the tokenizer's table.
std::string Sym(int byte) {
  const bool printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || byte >= 174;
  int cp = byte;
  if (!printable) {
    cp = 256;
    for (int b = 0; b < byte; ++b) {
      if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)) ++cp;
    }
  }
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// A vocabulary whose ids 0-255 are the byte symbols (id == byte), then `extra` tokens.
struct Vocab {
  std::vector<std::string> tokens;
  std::vector<std::string> merges;
  std::map<int, std::string> special, added;
  std::vector<std::string> regexes = {kGpt2};
  bool ignore_merges = false;

  Vocab() {
    for (int b = 0; b < 256; ++b) tokens.push_back(Sym(b));
  }
  // Adds "left right" as the next merge (and its result as a token); returns the new id.
  int Merge(const std::string& left, const std::string& right) {
    merges.push_back(left + " " + right);
    return Add(left + right);
  }
  int Add(const std::string& token) {
    tokens.push_back(token);
    return static_cast<int>(tokens.size()) - 1;
  }
  Tokenizer Build() const {
    nlohmann::json j;
    j["vocab"] = tokens;
    j["merges"] = merges;
    j["special_tokens"] = nlohmann::json::object();
    j["added_tokens"] = nlohmann::json::object();
    for (const auto& [id, content] : special) j["special_tokens"][std::to_string(id)] = content;
    for (const auto& [id, content] : added) j["added_tokens"][std::to_string(id)] = content;
    j["pre_tokenizer_regexes"] = regexes;
    j["ignore_merges"] = ignore_merges;
    j["add_bos"] = false;
    j["bos_id"] = nullptr;
    return Tokenizer::FromJson(j.dump());
  }
};

TEST(Tokenizer, LowerRankMergesFirst) {
  Vocab v;
  const int ab = v.Merge("a", "b");
  v.Merge("b", "c");
  EXPECT_EQ(v.Build().Encode("abc"), (Ids{ab, 'c'}));
  Vocab w;  // the same merges in the other order
  const int bc = w.Merge("b", "c");
  w.Merge("a", "b");
  EXPECT_EQ(w.Build().Encode("abc"), (Ids{'a', bc}));
}

TEST(Tokenizer, EqualRankMergesLeftmostFirstAndChains) {
  Vocab v;
  const int aa = v.Merge("a", "a");
  EXPECT_EQ(v.Build().Encode("aaa"), (Ids{aa, 'a'}));
  EXPECT_EQ(v.Build().Encode("aaaaa"), (Ids{aa, aa, 'a'}));
  const int aaaa = v.Merge("aa", "aa");
  EXPECT_EQ(v.Build().Encode("aaaaa"), (Ids{aaaa, 'a'}));
  // A merge whose result is merged again with a later, lower-priority pair.
  const int aab = v.Merge("aa", "b");
  EXPECT_EQ(v.Build().Encode("aab"), (Ids{aab}));
  EXPECT_EQ(v.Build().Encode("aaab"), (Ids{aa, 'a', 'b'}));
}

TEST(Tokenizer, IgnoreMergesTakesWholePiecesFromTheVocabulary) {
  Vocab v;
  const int xy = v.Merge("x", "y");
  const int xyz = v.Add("xyz");  // no merge leads to it
  EXPECT_EQ(v.Build().Encode("xyz"), (Ids{xy, 'z'}));
  v.ignore_merges = true;
  EXPECT_EQ(v.Build().Encode("xyz"), (Ids{xyz}));
  EXPECT_EQ(v.Build().Encode("xyzz"), (Ids{xy, 'z', 'z'}));  // not whole: BPE as usual
}

TEST(Tokenizer, AddedTokensLeftmostLongestAndParseSpecial) {
  Vocab v;
  const int s = v.Add("<s>"), sx = v.Add("<s>x"), tool = v.Add("<tool>");
  v.special = {{s, "<s>"}, {sx, "<s>x"}};
  v.added = {{tool, "<tool>"}};
  v.regexes = {};  // one piece per chunk: the ids show where the cuts are
  const Tokenizer t = v.Build();
  EXPECT_EQ(t.Encode("<s>x<s><tool>"), (Ids{sx, s, tool}));
  EXPECT_EQ(t.Encode("a<s>b"), (Ids{'a', s, 'b'}));
  // Special tokens unparsed are text; added ones are still cut out.
  EXPECT_EQ(t.Encode("<s><tool>", false), (Ids{'<', 's', '>', tool}));
  // As HF: the span of an unparsed special token is not searched again for other tokens.
  EXPECT_EQ(t.Encode("<s>x", false), (Ids{'<', 's', '>', 'x'}));
  EXPECT_EQ(t.Encode(""), Ids{});
  EXPECT_EQ(t.Decode({'a', s, tool, 'b'}), "a<s><tool>b");
}

TEST(Tokenizer, Gpt2PatternKeepsTheLastSpaceForTheNextWord) {
  Vocab v;
  const int sp2 = v.Merge(Sym(' '), Sym(' '));
  const int sp_b = v.Merge(Sym(' '), "b");
  // "a", "  " (\s+(?!\S) leaves one space), " b"
  EXPECT_EQ(v.Build().Encode("a   b"), (Ids{'a', sp2, sp_b}));
  // At the end of the text every space is taken: "a", "   " -> "  " + " " by BPE.
  EXPECT_EQ(v.Build().Encode("a   "), (Ids{'a', sp2, ' '}));
}

TEST(Tokenizer, WhitespaceIsUnicodeWhiteSpaceAsInOniguruma) {
  // HF's engine (Oniguruma) counts U+000B and U+0085 as \s, as ICU does (White_Space; ICU's
  // manual says [\t\n\f\r\p{Z}], which lacks both). Were they not space here,
  // " ?[^\s\p{L}\p{N}]+" would take both as one piece and merge them.
  Vocab v;
  v.Merge(Sym(0x0B), Sym(0x0B));
  EXPECT_EQ(v.Build().Encode("a\x0B\x0B" "b"), (Ids{'a', 0x0B, 0x0B, 'b'}));
  const int nel = v.Merge(Sym(0xC2), Sym(0x85));  // U+0085 in UTF-8
  v.Merge(Sym(0xC2) + Sym(0x85), Sym(0xC2) + Sym(0x85));
  EXPECT_EQ(v.Build().Encode("a\xC2\x85\xC2\x85" "b"), (Ids{'a', nel, nel, 'b'}));
}

TEST(Tokenizer, PatternsApplyInOrderToEachPiece) {
  Vocab v;
  const int one_two = v.Merge("1", "2");
  v.Merge(Sym(' '), "1");  // ranks below "1 2": " 123" is " ", "12", "3"
  EXPECT_EQ(v.Build().Encode("x 123"), (Ids{'x', ' ', one_two, '3'}));
  v.regexes = {R"(\p{N})", kGpt2};  // SmolLM2: digits alone first
  EXPECT_EQ(v.Build().Encode("x 123"), (Ids{'x', ' ', '1', '2', '3'}));
}

// With ignore_merges and every expected piece in the vocabulary, the ids name the pieces:
// a different split shows up as byte ids. Returns the expected ids.
Ids AddPieces(Vocab& v, const std::vector<std::string>& pieces) {
  std::map<std::string, int> id_of;
  Ids ids;
  for (const std::string& piece : pieces) {
    if (piece.size() == 1) {
      ids.push_back(static_cast<uint8_t>(piece[0]));
      continue;
    }
    std::string symbols;
    for (char c : piece) symbols += Sym(static_cast<uint8_t>(c));
    if (!id_of.count(symbols)) id_of[symbols] = v.Add(symbols);
    ids.push_back(id_of[symbols]);
  }
  return ids;
}

// The real patterns (SmolLM2: digits, then GPT-2; Llama 3) on one text; the pieces are HF
// tokenizers 0.23's pre_tokenize_str output.
TEST(Tokenizer, RealPatternsSplitAsHf) {
  const std::string text =
      "Hello, WORLD'S 12345 caf\u00e9\u00a0\u00a0\u4e2d\u6587 \u0395\u03bb\u03bb\u03b7\u03bd\u03b9"
      "\u03ba\u03ac \U0001F44D\U0001F3FD\n\n\tdon't  x\v\vy 3.14\r\n";
  Vocab smol;
  smol.ignore_merges = true;
  smol.regexes = {R"(\p{N})", kGpt2};
  smol.Merge("1", "2");  // applies only if the digits were not split apart
  const Ids smol_ids = AddPieces(
      smol, {"Hello", ",", " WORLD", "'", "S", " ", "1", "2", "3", "4", "5", " caf\u00e9",
             "\u00a0", "\u00a0", "\u4e2d\u6587", " \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac",
             " \U0001F44D\U0001F3FD", "\n\n", "\t", "don", "'t", " ", " x", "\v", "\v", "y", " ",
             "3", ".", "1", "4", "\r\n"});
  EXPECT_EQ(smol.Build().Encode(text), smol_ids);

  Vocab llama3;
  llama3.ignore_merges = true;
  llama3.regexes = {
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
  const Ids llama3_ids = AddPieces(
      llama3, {"Hello", ",", " WORLD", "'S", " ", "123", "45", " caf\u00e9", "\u00a0",
               "\u00a0\u4e2d\u6587", " \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac",
               " \U0001F44D\U0001F3FD\n\n", "\tdon", "'t", " ", " x", "\v", "\vy", " ", "3", ".",
               "14", "\r\n"});
  EXPECT_EQ(llama3.Build().Encode(text), llama3_ids);
  // ICU's default 8 MB backtracking stack overflowed here (~400,000 characters of line breaks);
  // HF tokenizers splits it: one piece, "\r\n" byte ids with ignore_merges and no such token.
  EXPECT_EQ(llama3.Build().Encode(std::string(400000, '\n')).size(), 400000u);
}

TEST(Tokenizer, NonAsciiBytesAndRoundTrip) {
  Vocab v;
  const int e_acute = v.Merge(Sym(0xC3), Sym(0xA9));
  const Tokenizer t = v.Build();
  EXPECT_EQ(t.Encode("\xC3\xA9"), (Ids{e_acute}));
  for (const std::string text : {"caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
                                 " \t\n\n  x  ", "don't I'M we'll 12345 3.14159"}) {
    EXPECT_EQ(t.Decode(t.Encode(text)), text);
  }
}

// Expected values: CPython 3.11's bytes.decode("utf-8", "replace") of the same bytes, encoded back
// to UTF-8 (one U+FFFD per maximal subpart of an ill-formed sequence, as Unicode recommends).
TEST(Tokenizer, ReplaceInvalidUtf8AsPythonDecodes) {
  const std::string r = "\xEF\xBF\xBD";  // U+FFFD
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"abc", "abc"},
      {"", ""},
      {"a\xE2\x82", "a" + r},                          // a character cut short
      {"\xC0\xAF", r + r},                             // an overlong form
      {"\xED\xA0\x80", r + r + r},                     // a surrogate
      {"\xF4\x90\x80\x80", r + r + r + r},             // past U+10FFFF
      {"\xF0\x9F\x98", r},                            // an emoji cut short
      {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},       // the whole emoji
      {"x\x80y", "x" + r + "y"},                        // a lone continuation byte
      {"\xE2\x82\xAC\xE2", "\xE2\x82\xAC" + r},        // a whole character, then a cut one
      {"\xFF\xFE", r + r},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string got = ReplaceInvalidUtf8(cases[i].first);
    EXPECT_EQ(got, cases[i].second) << "case " << i;
    EXPECT_EQ(InvalidUtf8At(got), std::string::npos) << "case " << i;
  }
}

TEST(Tokenizer, RefusesBadInputAndBadSections) {
  Vocab v;
  const Tokenizer t = v.Build();
  EXPECT_THROW(t.Encode("ok \xC3("), Error);       // truncated sequence
  EXPECT_THROW(t.Encode("\xED\xA0\x80"), Error);   // a surrogate
  Vocab missing;
  missing.merges.push_back("q r");  // "qr" is not a token
  EXPECT_THROW(missing.Build(), Error);
  Vocab bad_regex;
  bad_regex.regexes = {"(unclosed"};
  EXPECT_THROW(bad_regex.Build(), Error);
  EXPECT_THROW(Tokenizer::FromJson("{\"vocab\": []}"), Error);
  const nlohmann::json j = nlohmann::json::parse(R"({"vocab": ["a"], "merges": [], "pre_tokenizer_regexes": [],
      "ignore_merges": false, "add_bos": true, "bos_id": 1000000000000})");
  try {
    Tokenizer::FromJson(j.dump());
    FAIL() << "no error";
  } catch (const Error& e) {  // not a wrapped 32-bit value
    EXPECT_NE(std::string(e.what()).find("bos_id 1000000000000 is not a token id"), std::string::npos) << e.what();
  }
}

// A pattern that backtracks exponentially on a run of a's without a match ends in a clear
// error (ICU's time limit), not a hang; a real pattern on a long word is unaffected.
TEST(Tokenizer, ABacktrackingPatternFailsInsteadOfHanging) {
  Vocab v;
  v.regexes = {"(a|a)+$"};
  const Tokenizer t = v.Build();
  const auto start = std::chrono::steady_clock::now();
  try {
    t.Encode(std::string(40, 'a') + "b");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ran past its time limit"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  Vocab gpt2;
  EXPECT_EQ(gpt2.Build().Encode(std::string(100000, 'x')).size(), 100000u);  // byte ids, no merges
}

// The golden package's tokenizer (tests/reference/tiny_models.py, vocab 97): the three
// special tokens, then the symbols of bytes 32..125, and no merges.
TEST(Tokenizer, GoldenPackage) {
  auto pkg = Package::Open(GoldenPath("tiny_9x3.tpkg"));
  const Tokenizer t = Tokenizer::FromJson(pkg->tokenizer_json());
  ASSERT_EQ(t.vocab_size(), 97);
  EXPECT_FALSE(t.add_bos());
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_THROW(t.Encode("<|im_start|>user\x7f"), Error);  // byte 127 has no token in this vocabulary
  const Ids ids = t.Encode("<|im_start|>hi there<|im_end|>");
  Ids want = {1};
  for (char c : std::string("hi there")) want.push_back(3 + c - 32);
  want.push_back(2);
  EXPECT_EQ(ids, want);
  EXPECT_EQ(t.Decode(ids), "<|im_start|>hi there<|im_end|>");
}

}  // namespace
}  // namespace tileinfer
