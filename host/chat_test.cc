// ChatFormat renders what the planner's reduced form says, from a golden-style section.
#include "host/chat.h"

#include <gtest/gtest.h>

#include "host/error.h"

namespace tileinfer {
namespace {

const char* kSection = R"({"vocab": [], "chat": {"head": "<s>", "default_system": "[SYS]be nice[/SYS]",
  "roles": {"system": ["[SYS]", "[/SYS]"], "user": ["[U]", "[/U]"], "assistant": ["[A]", "[/A]"]},
  "generation_prompt": "[A]"}})";

TEST(ChatFormatTest, RendersRolesDefaultSystemAndPrompt) {
  const ChatFormat f = ChatFormat::FromTokenizerJson(kSection);
  EXPECT_EQ(f.Render({{"user", "hi"}}, true), "<s>[SYS]be nice[/SYS][U]hi[/U][A]");
  EXPECT_EQ(f.Render({{"system", "terse"}, {"user", "hi"}, {"assistant", "yo"}, {"user", "?"}}, false),
            "<s>[SYS]terse[/SYS][U]hi[/U][A]yo[/A][U]?[/U]");
}

TEST(ChatFormatTest, RefusesUnknownRoleAndMissingFormat) {
  const ChatFormat f = ChatFormat::FromTokenizerJson(kSection);
  EXPECT_THROW(f.Render({{"tool", "x"}}, false), Error);
  try {
    ChatFormat::FromTokenizerJson(R"({"vocab": [], "chat": null})");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no chat format"), std::string::npos);
  }
  EXPECT_THROW(ChatFormat::FromTokenizerJson(R"({"chat": {"head": 1}})"), Error);
}

}  // namespace
}  // namespace tileinfer
