#include "host/tokenizer.h"

#include <nlohmann/json.hpp>

#include "host/error.h"

namespace tileinfer {
namespace {

// GPT-2's byte-to-symbol table: printable bytes stand for themselves, the other 68 bytes
// are shifted to code points 256.. so that every byte is a visible character.
std::unordered_map<uint32_t, uint8_t> UnicodeToByte() {
  std::unordered_map<uint32_t, uint8_t> table;
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    table[printable ? b : next++] = static_cast<uint8_t>(b);
  }
  return table;
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

}  // namespace

Tokenizer Tokenizer::FromJson(const std::string& text) {
  Tokenizer tok;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    tok.vocab_ = j.at("vocab").get<std::vector<std::string>>();
    if (j.contains("special_tokens")) {
      for (const auto& [id, content] : j.at("special_tokens").items()) {
        tok.special_[std::stoi(id)] = content.get<std::string>();
      }
    }
  } catch (const std::exception& e) {
    throw Error(std::string("the package's tokenizer section is malformed (") + e.what() +
                "): re-run the planner");
  }
  tok.unicode_to_byte_ = UnicodeToByte();
  return tok;
}

std::string Tokenizer::Decode(const std::vector<int>& ids) const {
  std::string out;
  for (int id : ids) {
    if (id < 0 || id >= vocab_size()) {
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " +
                  std::to_string(vocab_size()));
    }
    auto special = special_.find(id);
    if (special != special_.end()) {
      out += special->second;
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
