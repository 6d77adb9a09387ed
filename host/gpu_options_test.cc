// GpuOptions' defaults that depend on the model, checked without a GPU.
#include <gtest/gtest.h>

#include "host/gpu_executor.h"

namespace tileinfer {
namespace {

TEST(AttentionTileMin, DefaultTilesOnlyUpToHeadDim64) {
  EXPECT_EQ(GpuOptions{}.attention_tile_min, 0);  // 0: by head_dim
  for (int head_dim : {8, 32, 64}) EXPECT_EQ(AttentionTileMin(0, head_dim), 65) << head_dim;
  for (int head_dim : {66, 80, 128}) EXPECT_EQ(AttentionTileMin(0, head_dim), kNoAttentionTiles) << head_dim;
  EXPECT_GT(kNoAttentionTiles, 1 << 20);  // above any context a package can hold
}

TEST(AttentionTileMin, AnExplicitValueWins) {
  EXPECT_EQ(AttentionTileMin(1, 128), 1);
  EXPECT_EQ(AttentionTileMin(96, 64), 96);
  EXPECT_EQ(AttentionTileMin(1000000, 32), 1000000);
}

}  // namespace
}  // namespace tileinfer
