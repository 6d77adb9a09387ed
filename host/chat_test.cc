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

TEST(ChatFormatTest, SystemMessageAfterTheFirstTakesItsOwnStringsOrIsRefused) {
  const ChatFormat later = ChatFormat::FromTokenizerJson(R"({"chat": {"head": "<s>", "default_system": "[D]",
    "roles": {"system": ["[SYS]", "[/SYS]"], "user": ["[U]", "[/U]"], "assistant": ["[A]", "[/A]"]},
    "system_later": ["<s>[SYS]", "[/SYS]"], "generation_prompt": "[A]"}})");
  EXPECT_EQ(later.Render({{"user", "hi"}, {"system", "mid"}, {"user", "?"}}, true),
            "<s>[D][U]hi[/U]<s>[SYS]mid[/SYS][U]?[/U][A]");
  EXPECT_EQ(later.Render({{"system", "a"}, {"system", "b"}}, false), "<s>[SYS]a[/SYS]<s>[SYS]b[/SYS]");
  // Sections without the key (planned before it) or with null refuse such a message.
  for (const char* section : {kSection, R"({"chat": {"head": "", "default_system": "", "roles": {"system": ["S", ""],
                                           "user": ["U", ""], "assistant": ["A", ""]}, "system_later": null,
                                           "generation_prompt": ""}})"}) {
    const ChatFormat f = ChatFormat::FromTokenizerJson(section);
    EXPECT_NO_THROW(f.Render({{"system", "first"}, {"user", "hi"}}, true));
    try {
      f.Render({{"user", "hi"}, {"system", "mid"}}, true);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("chat message 1 is a system message after the first"), std::string::npos)
          << e.what();
    }
  }
}

TEST(ChatFormatTest, RefusesUnknownRoleAndMissingFormat) {
  const ChatFormat f = ChatFormat::FromTokenizerJson(kSection);
  EXPECT_THROW(f.Render({{"tool", "x"}}, false), Error);
  try {
    ChatFormat::FromTokenizerJson(R"({"vocab": ["a"], "chat": null})");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no chat format (the model has no chat template"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("give the prompt as text or ids"), std::string::npos);
  }
  for (const char* no_tokenizer : {"{}", R"({"vocab": [], "chat": null})"}) {  // ids only: say so
    try {
      ChatFormat::FromTokenizerJson(no_tokenizer);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no chat format and no tokenizer"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("give the prompt as token ids"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(ChatFormat::FromTokenizerJson(R"({"chat": {"head": 1}})"), Error);
}

}  // namespace
}  // namespace tileinfer
