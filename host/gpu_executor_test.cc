// AttentionMergePlanError (GpuOptions::attention_merge's plan requirements) on hand-made task
// lists; no GPU needed.
#include "host/gpu_executor.h"

#include <gtest/gtest.h>

#include <vector>

namespace tileinfer {
namespace {

constexpr int kLayers = 2, kKvHeads = 2, kChunks = 3, kWorkers = 8, kWaves = 6;

format::TaskRecord Attention(uint32_t layer, uint32_t kv, uint32_t chunk, uint32_t worker) {
  format::TaskRecord t{};
  t.opcode = static_cast<uint16_t>(format::Opcode::ATTENTION);
  t.layer = layer;
  t.wave = 1 + 3 * layer;  // one ATTENTION wave per layer
  t.worker = worker;
  t.param0 = kv;
  t.slot = chunk;
  t.param1 = kChunks;
  t.out_buf = 4;
  return t;
}

// Every (layer, K/V head, chunk) once, a worker each within a wave, plus a non-ATTENTION task
// sharing a worker and wave with one of them (allowed).
std::vector<format::TaskRecord> GoodPlan() {
  std::vector<format::TaskRecord> tasks;
  for (uint32_t l = 0; l < kLayers; ++l) {
    for (uint32_t kv = 0; kv < kKvHeads; ++kv) {
      for (uint32_t c = 0; c < kChunks; ++c) tasks.push_back(Attention(l, kv, c, kv * kChunks + c));
    }
  }
  format::TaskRecord other{};
  other.opcode = static_cast<uint16_t>(format::Opcode::ATTN_OUT);
  other.wave = 1;
  other.worker = 0;
  tasks.push_back(other);
  return tasks;
}

std::string Check(const std::vector<format::TaskRecord>& tasks) {
  return AttentionMergePlanError(tasks.data(), tasks.size(), kWorkers, kWaves, kLayers, kKvHeads, kChunks);
}

TEST(AttentionMergePlanTest, AcceptsAPlanWithEveryChunkOnceOnItsOwnWorker) { EXPECT_EQ(Check(GoodPlan()), ""); }

TEST(AttentionMergePlanTest, RefusesTwoAttentionTasksOnOneWorkerInOneWave) {
  auto tasks = GoodPlan();
  tasks[1].worker = tasks[0].worker;  // layer 0, K/V head 0: chunks 0 and 1 on one worker
  EXPECT_NE(Check(tasks).find("at most one ATTENTION task per worker and wave"), std::string::npos) << Check(tasks);
}

TEST(AttentionMergePlanTest, RefusesAMissingChunk) {
  auto tasks = GoodPlan();
  tasks.erase(tasks.begin() + 4);  // layer 0, K/V head 1, chunk 1
  EXPECT_NE(Check(tasks).find("every chunk of layer 0, K/V head 1"), std::string::npos) << Check(tasks);
}

TEST(AttentionMergePlanTest, RefusesAChunkTwice) {
  auto tasks = GoodPlan();
  auto again = tasks[2];  // layer 0, K/V head 0, chunk 2, once more on a free worker
  again.worker = 7;
  tasks.push_back(again);
  EXPECT_NE(Check(tasks).find("once, in one wave, writing one buffer; chunk 2"), std::string::npos) << Check(tasks);
}

TEST(AttentionMergePlanTest, RefusesAChunkInAnotherWaveOrBuffer) {
  auto wave = GoodPlan();
  wave[2].wave += 1;
  EXPECT_NE(Check(wave).find("once, in one wave"), std::string::npos) << Check(wave);
  auto buffer = GoodPlan();
  buffer[2].out_buf = 5;
  EXPECT_NE(Check(buffer).find("writing one buffer"), std::string::npos) << Check(buffer);
}

TEST(AttentionMergePlanTest, RefusesATaskOutsideThePlan) {
  auto tasks = GoodPlan();
  tasks[0].slot = kChunks;
  EXPECT_NE(Check(tasks).find("outside the plan"), std::string::npos) << Check(tasks);
}

}  // namespace
}  // namespace tileinfer
