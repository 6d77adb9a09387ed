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
  EXPECT_NE(ErrorOf(kv, 5, {1}).find("(3 continues; an earlier one goes back"), std::string::npos);
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

}  // namespace
}  // namespace tileinfer
