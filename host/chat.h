// Chat rendering without a template engine: the planner reduced the model's Jinja chat
// template to per-role prefix/suffix strings (py/planner/chat_template.py), checked there
// against the full template; this renders a conversation from them.
#pragma once

#include <string>
#include <vector>

namespace tileinfer {

struct ChatMessage {
  std::string role;     // "system", "user" or "assistant"
  std::string content;
};

class ChatFormat {
 public:
  // From the package's tokenizer section (its "chat" key). Throws Error when the package
  // has no chat format (the model has no template, or it could not be reduced: re-plan
  // tells why) or the section is malformed.
  static ChatFormat FromTokenizerJson(const std::string& text);

  // head + [default system] + prefix(role) content suffix(role) ... + [generation prompt];
  // a system message after the first message takes the "system_later" prefix and suffix.
  // Throws Error for an unknown role, and for a system message after the first when the
  // format has none (the template refuses one, or the package was planned before the
  // planner derived them).
  std::string Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

 private:
  std::string head_, default_system_, generation_prompt_;
  std::string prefix_[3], suffix_[3];  // system, user, assistant
  bool has_system_later_ = false;
  std::string system_later_prefix_, system_later_suffix_;
};

}  // namespace tileinfer
