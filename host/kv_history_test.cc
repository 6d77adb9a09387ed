// KvHistory (host/generate.h): the positions-in-order rule both executors share.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "host/error.h"
#include "host/generate.h"

namespace tileinfer {
namespace {

// Begin, then Done, of tokens at positions start..: the executors' order.
void RunAt(KvHistory& kv, int start, const std::vector<int>& tokens) {
  kv.Begin(start, tokens.data(), static_cast<int>(tokens.size()));
  kv.Done(start, tokens.data(), static_cast<int>(tokens.size()));
}

std::string ErrorOf(KvHistory& kv, int start, const std::vector<int>& tokens) {
  try {
    RunAt(kv, start, tokens);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(KvHistory, RefusesAPositionPastTheRowsHeld) {
  KvHistory kv;
  EXPECT_NE(ErrorOf(kv, 1, {5}).find("position 1 skips position 0, which attention there would read"),
            std::string::npos);
  RunAt(kv, 0, {5, 6, 7});
  EXPECT_EQ(kv.held(), 3);
  EXPECT_NE(ErrorOf(kv, 5, {1}).find("position 5 skips positions 3-4, "), std::string::npos);
  EXPECT_NE(ErrorOf(kv, 5, {1}).find("(3 continues; an earlier one goes back, and 0 starts a new request)"),
            std::string::npos);
  EXPECT_EQ(kv.held(), 3);  // a refused run changes nothing
  RunAt(kv, 3, {8});
  EXPECT_EQ(kv.held(), 4);
}

TEST(KvHistory, SameTokensKeepTheRowsAfterThem) {
  KvHistory kv;
  RunAt(kv, 0, {5, 6, 7, 8});
  RunAt(kv, 1, {6, 7});  // the benchmark's repeated window: the same bits again
  EXPECT_EQ(kv.held(), 4);
  EXPECT_EQ(ErrorOf(kv, 4, {9}), "");
  EXPECT_EQ(kv.held(), 5);
}

TEST(KvHistory, AnotherTokenDropsTheRowsAfterIt) {
  KvHistory kv;
  RunAt(kv, 0, {5, 6, 7, 8});
  RunAt(kv, 1, {6, 9});  // position 2 now holds another token: rows 3.. are stale
  EXPECT_EQ(kv.held(), 3);
  EXPECT_NE(ErrorOf(kv, 4, {1}).find("position 4 skips position 3,"), std::string::npos);
  // Begin drops the stale rows before the run, so a run that fails keeps none of them.
  const int other = 4;
  kv.Begin(1, &other, 1);
  EXPECT_EQ(kv.held(), 1);
}

TEST(KvHistory, PositionZeroStartsANewRequest) {
  KvHistory kv;
  RunAt(kv, 0, {5, 6, 7, 8});
  RunAt(kv, 0, {5});  // the same token, but a new request (the executors clear its marks there)
  EXPECT_EQ(kv.held(), 1);
  EXPECT_NE(ErrorOf(kv, 2, {7}).find("position 2 skips position 1,"), std::string::npos);
}

TEST(KvHistory, DoneDropsTheRowsAfterADifferentToken) {
  KvHistory kv;
  RunAt(kv, 0, {5, 6, 7, 8});
  const int other = 9;
  kv.Done(1, &other, 1);  // without Begin: still no stale row kept
  EXPECT_EQ(kv.held(), 2);
}

TEST(KvHistory, DropFromAndDoneOfPartOfARun) {
  KvHistory kv;
  RunAt(kv, 0, {5, 6, 7, 8});
  kv.DropFrom(2);  // a launch whose later steps feed tokens it chooses
  EXPECT_EQ(kv.held(), 2);
  kv.DropFrom(3);  // past the rows held: nothing
  EXPECT_EQ(kv.held(), 2);
  const std::vector<int> ran = {6, 1, 2};
  kv.Done(1, ran.data(), 3);
  EXPECT_EQ(kv.held(), 4);
  EXPECT_THROW(kv.Done(6, ran.data(), 1), Error);
}

TEST(KvHistory, SharedPrefixAndTheFirstPromptPositionOfARequest) {
  KvHistory kv;
  GenerateOptions reuse;
  reuse.reuse_kv_cache = true;
  EXPECT_EQ(kv.SharedPrefix({5, 6}), 0);
  EXPECT_EQ(FirstPromptPosition(kv, {5, 6}, reuse), 0);
  RunAt(kv, 0, {5, 6, 7, 8});
  EXPECT_EQ(kv.SharedPrefix({5, 6, 7, 8, 9, 10}), 4);  // a chat's next turn: every row kept
  EXPECT_EQ(FirstPromptPosition(kv, {5, 6, 7, 8, 9, 10}, reuse), 4);
  EXPECT_EQ(kv.SharedPrefix({5, 6, 1, 8}), 2);          // rows after a changed token are not shared
  EXPECT_EQ(FirstPromptPosition(kv, {5, 6, 1, 8}, reuse), 2);
  EXPECT_EQ(kv.SharedPrefix({5, 6}), 2);
  // The same prompt again, or a shorter one: its last position runs again for its logits.
  EXPECT_EQ(FirstPromptPosition(kv, {5, 6, 7, 8}, reuse), 3);
  EXPECT_EQ(FirstPromptPosition(kv, {5, 6}, reuse), 1);
  EXPECT_EQ(kv.SharedPrefix({9, 6, 7}), 0);
  EXPECT_EQ(FirstPromptPosition(kv, {5, 6, 7, 8, 9}, GenerateOptions{}), 0);  // reuse is asked for
}

// FedTokens against cuda/worker.cu's step loop: forced tokens first, then each step takes the
// token the step before it chose.
TEST(FedTokens, PromptGenerationAndStepLaunches) {
  // A prompt launch: every step forced, the last one with logits.
  EXPECT_EQ(FedTokens({1, 2, 3}, 2, {40}, 3), (std::vector<int>{1, 2, 3}));
  // A generation launch: one forced token, logits at every step; step s takes chosen[s - 1].
  EXPECT_EQ(FedTokens({7}, 0, {40, 41, 42, 43}, 4), (std::vector<int>{7, 40, 41, 42}));
  // Stopped after two tokens: the two steps that chose them ran.
  EXPECT_EQ(FedTokens({7}, 0, {40, 41}, 2), (std::vector<int>{7, 40}));
  // A non-finite logit at the third step: it ran too (Run counts count + 1 steps).
  EXPECT_EQ(FedTokens({7}, 0, {40, 41}, 3), (std::vector<int>{7, 40, 41}));
  // Steps past the forced ones before the first logits step take their predecessor's token.
  EXPECT_EQ(FedTokens({7}, 2, {40}, 4), (std::vector<int>{7, 7, 7, 40}));
  EXPECT_EQ(FedTokens({7}, 0, {}, 0), std::vector<int>{});
}

TEST(FedTokens, RefusesWhatTheLaunchDidNotRecord) {
  EXPECT_THROW(FedTokens({}, 0, {40}, 1), Error);
  EXPECT_THROW(FedTokens({7}, 0, {40}, 3), Error);  // step 2 needs chosen[1]
}

}  // namespace
}  // namespace tileinfer
