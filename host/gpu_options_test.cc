// GpuOptions' defaults, and the choice of worker kernel by the model's shape, checked without a
// GPU.
#include <gtest/gtest.h>

#include "cuda/worker.h"
#include "host/gpu_executor.h"

namespace tileinfer {
namespace {

TEST(AttentionTileMin, TheDefaultTilesFrom65Positions) {
  EXPECT_EQ(GpuOptions{}.attention_tile_min, 0);  // 0: the default
  EXPECT_EQ(AttentionTileMin(0), 65);
}

TEST(AttentionTileMin, AnExplicitValueWins) {
  EXPECT_EQ(AttentionTileMin(1), 1);
  EXPECT_EQ(AttentionTileMin(96), 96);
  EXPECT_EQ(AttentionTileMin(1000000), 1000000);
}

// The narrow kernel compiles ATTENTION for head dims up to 64 that are multiples of 8 and groups
// up to 4 only (cuda/op_attention.cuh OpAttention<false>), so every other one must run the wide
// kernel, whatever the hidden size.
TEST(WorkerWide, HiddenAbove2048HeadDimAbove64OrGroupAbove4) {
  EXPECT_FALSE(WorkerWide(576, 64, 3));   // SmolLM2-135M
  EXPECT_FALSE(WorkerWide(2048, 64, 4));  // Llama 3.2 1B
  EXPECT_FALSE(WorkerWide(64, 16, 2));    // a tiny test model
  EXPECT_TRUE(WorkerWide(3072, 128, 3));  // Llama 3.2 3B
  EXPECT_TRUE(WorkerWide(4096, 128, 4));  // Llama 3.1 8B
  EXPECT_TRUE(WorkerWide(2304, 64, 3));   // hidden above 2,048 alone
  for (int head_dim : {72, 80, 96, 128}) EXPECT_TRUE(WorkerWide(1024, head_dim, 1)) << head_dim;
  for (int group : {5, 6, 8}) EXPECT_TRUE(WorkerWide(2048, 64, group)) << group;  // TinyLlama's 8
  for (int head_dim : {12, 36, 60}) EXPECT_TRUE(WorkerWide(1024, head_dim, 2)) << head_dim;  // no tiles: batches
  EXPECT_EQ(kNarrowMaxHeadDim, 64);
  EXPECT_EQ(kNarrowMaxGroup, 4);
}

}  // namespace
}  // namespace tileinfer
