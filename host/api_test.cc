// The public API's contract on a golden package, on the CPU: an exception from on_token is the
// request's error (never an exception out of Generate), and a refused Generate leaves the
// caller's Result as it was; a request keeps the K/V rows it shares with the last one.
#include "host/api.h"

#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "tests/golden/golden_path.h"

namespace tileinfer {
namespace {

std::unique_ptr<api::Engine> OpenGolden() {
  api::EngineOptions options;
  options.device = "cpu";
  options.cpu_threads = 1;
  std::unique_ptr<api::Engine> engine;
  const api::Status s = api::Engine::Open(GoldenPath("tiny_9x3.tpkg"), options, &engine);
  EXPECT_TRUE(s.ok()) << s.message();
  return engine;
}

api::Request Ids() {
  api::Request r;
  r.prompt_ids = {3, 4, 5};
  r.max_new_tokens = 6;
  r.stop_at_eos = false;
  return r;
}

TEST(ApiTest, AnExceptionFromOnTokenIsTheRequestsError) {
  std::unique_ptr<api::Engine> engine = OpenGolden();
  api::Result r;
  int calls = 0;
  api::Status s = engine->Generate(Ids(), [&](int, const std::string&) -> bool {
    if (++calls == 2) throw std::runtime_error("boom");
    return true;
  }, &r);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "on_token threw: boom (the request stopped after 2 token(s); the engine serves the next one)");
  EXPECT_EQ(calls, 2);
  s = engine->Generate(Ids(), [](int, const std::string&) -> bool { throw 42; }, &r);
  EXPECT_EQ(s.message(), "on_token threw an exception that is not a std::exception (the request stopped after 1 "
                         "token(s); the engine serves the next one)");
  api::Result again;
  ASSERT_TRUE(engine->Generate(Ids(), nullptr, &again).ok());  // the engine serves the next request
  api::Result fresh;
  ASSERT_TRUE(OpenGolden()->Generate(Ids(), nullptr, &fresh).ok());
  EXPECT_EQ(again.tokens, fresh.tokens);
  EXPECT_EQ(again.tokens.size(), 6u);
}

TEST(ApiTest, ARequestKeepsTheKvRowsItSharesWithTheLastOne) {
  std::unique_ptr<api::Engine> engine = OpenGolden();
  api::Result first, next, fresh;
  ASSERT_TRUE(engine->Generate(Ids(), nullptr, &first).ok());
  EXPECT_EQ(first.prompt_reused, 0);
  // The prompt and the tokens so far, then one more: every row but the last token's is kept.
  api::Request more = Ids();
  more.prompt_ids.insert(more.prompt_ids.end(), first.tokens.begin(), first.tokens.end());
  more.prompt_ids.push_back(7);
  ASSERT_TRUE(engine->Generate(more, nullptr, &next).ok());
  EXPECT_EQ(next.prompt_reused, 3 + 6 - 1);
  more.reuse_kv_cache = false;
  ASSERT_TRUE(OpenGolden()->Generate(more, nullptr, &fresh).ok());
  EXPECT_EQ(fresh.prompt_reused, 0);
  EXPECT_EQ(next.tokens, fresh.tokens);
  ASSERT_TRUE(engine->Generate(more, nullptr, &next).ok());  // asked not to: every position runs
  EXPECT_EQ(next.prompt_reused, 0);
  EXPECT_EQ(next.tokens, fresh.tokens);
}

TEST(ApiTest, ChatPromptIdsNeedsAMessage) {
  std::unique_ptr<api::Engine> engine = OpenGolden();
  std::vector<int> ids;
  EXPECT_EQ(engine->ChatPromptIds({}, &ids).message(), "the chat is empty: give at least one message");
}

TEST(ApiTest, AChatMessageThatIsNotUtf8IsNamed) {
  // Named by its place in the chat: the tokenizer's offset would be the rendered conversation's.
  std::unique_ptr<api::Engine> engine = OpenGolden();
  std::vector<int> ids;
  const std::string message = engine->ChatPromptIds({{"user", "hi"}, {"assistant", "ok\xE2\x82"}}, &ids).message();
  EXPECT_EQ(message.rfind("chat[1] (assistant) is not valid UTF-8 at byte 2: replace its ill-formed bytes", 0), 0u)
      << message;
}

TEST(ApiTest, ARefusedGenerateLeavesTheResultAsItWas) {
  std::unique_ptr<api::Engine> engine = OpenGolden();
  api::Result outer;
  api::Status inner;
  size_t text_before = 0;
  const api::Status s = engine->Generate(Ids(), [&](int, const std::string&) {
    if (!outer.text.empty() && inner.ok()) {
      text_before = outer.text.size();
      inner = engine->Generate(Ids(), nullptr, &outer);  // refused: the engine is busy
      EXPECT_EQ(outer.text.size(), text_before);
    }
    return true;
  }, &outer);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_NE(inner.message().find("already generating"), std::string::npos) << inner.message();
  EXPECT_GT(text_before, 0u);
  EXPECT_EQ(outer.tokens.size(), 6u);
}

}  // namespace
}  // namespace tileinfer
