// GpuOptions' defaults that depend on the model, checked without a GPU.
#include <gtest/gtest.h>

#include "host/gpu_executor.h"

namespace tileinfer {
namespace {

TEST(AttentionTileMin, NarrowKernelTilesOnlyUpToHeadDim64) {
  EXPECT_EQ(GpuOptions{}.attention_tile_min, 0);  // 0: by head_dim and kernel
  for (int head_dim : {8, 32, 64}) EXPECT_EQ(AttentionTileMin(0, head_dim, false), 65) << head_dim;
  for (int head_dim : {66, 80, 128}) {
    EXPECT_EQ(AttentionTileMin(0, head_dim, false), kNoAttentionTiles) << head_dim;
  }
  EXPECT_GT(kNoAttentionTiles, 1 << 20);  // above any context a package can hold
}

TEST(AttentionTileMin, WideKernelTilesEveryHeadDim) {
  for (int head_dim : {8, 64, 80, 128}) EXPECT_EQ(AttentionTileMin(0, head_dim, true), 65) << head_dim;
}

TEST(AttentionTileMin, AnExplicitValueWins) {
  for (bool wide : {false, true}) {
    EXPECT_EQ(AttentionTileMin(1, 128, wide), 1);
    EXPECT_EQ(AttentionTileMin(96, 64, wide), 96);
    EXPECT_EQ(AttentionTileMin(1000000, 32, wide), 1000000);
  }
}

}  // namespace
}  // namespace tileinfer
