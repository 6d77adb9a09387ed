#include "host/chat.h"

#include <nlohmann/json.hpp>

#include "host/error.h"

namespace tileinfer {
namespace {

const char* const kRoles[3] = {"system", "user", "assistant"};

}  // namespace

ChatFormat ChatFormat::FromTokenizerJson(const std::string& text) {
  ChatFormat f;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.contains("chat") || j.at("chat").is_null()) {
      // A package with no tokenizer at all (its checkpoint had no tokenizer.json) takes ids only.
      const bool has_vocab = j.contains("vocab") && j.at("vocab").is_array() && !j.at("vocab").empty();
      throw Error(has_vocab ? "this package has no chat format (the model has no chat template, or the planner "
                              "could not reduce it; its log says why): give the prompt as text or ids instead"
                            : "this package has no chat format and no tokenizer (its checkpoint had no "
                              "tokenizer.json): give the prompt as token ids, or re-plan from a checkpoint "
                              "with its tokenizer.json");
    }
    const nlohmann::json& c = j.at("chat");
    f.head_ = c.at("head").get<std::string>();
    f.default_system_ = c.at("default_system").get<std::string>();
    f.generation_prompt_ = c.at("generation_prompt").get<std::string>();
    for (int r = 0; r < 3; ++r) {
      const nlohmann::json& pair = c.at("roles").at(kRoles[r]);
      f.prefix_[r] = pair.at(0).get<std::string>();
      f.suffix_[r] = pair.at(1).get<std::string>();
    }
    if (c.contains("system_later") && !c.at("system_later").is_null()) {
      f.has_system_later_ = true;
      f.system_later_prefix_ = c.at("system_later").at(0).get<std::string>();
      f.system_later_suffix_ = c.at("system_later").at(1).get<std::string>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("the package's chat format is malformed (") + e.what() + "): re-run the planner");
  }
  return f;
}

std::string ChatFormat::Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  std::string out = head_;
  if (!messages.empty() && messages[0].role != "system") out += default_system_;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    int r = 0;
    while (r < 3 && m.role != kRoles[r]) ++r;
    if (r == 3) throw Error("chat role '" + m.role + "' is not one of system, user, assistant");
    if (r == 0 && i > 0) {
      if (!has_system_later_) {
        throw Error("chat message " + std::to_string(i) +
                    " is a system message after the first message, which this package's chat format "
                    "cannot render (the model's template refuses it, or the package was planned before "
                    "TileInfer derived it): put the system message first, or re-run the planner");
      }
      out += system_later_prefix_ + m.content + system_later_suffix_;
      continue;
    }
    out += prefix_[r] + m.content + suffix_[r];
  }
  if (add_generation_prompt) out += generation_prompt_;
  return out;
}

}  // namespace tileinfer
