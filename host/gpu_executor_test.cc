// AttentionMergePlanError and QkvCountersPlanError (the plan requirements of
// GpuOptions::attention_merge and ::qkv_counters) on hand-made task lists; no GPU needed.
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

// QkvCountersPlanError: 2 layers, 4 query heads, 2 K/V heads, head_dim 4, so QKV rows are
// q 0-15 (K/V head 0: 0-7, 1: 8-15), k 16-23 (16-19, 20-23), v 24-31 (24-27, 28-31).
// Layer l: QKV wave 1 + 3l, ATTENTION 2 + 3l, ATTN_OUT 3 + 3l.
constexpr int kQLayers = 2, kQHeads = 4, kQKvHeads = 2, kQHeadDim = 4, kQWaves = 7;

// Buffers as the planner uses them: x0 (1) -> QKV -> qkv (2) -> ATTENTION -> partials (3), cache (4).
format::TaskRecord Task(format::Opcode op, uint32_t layer, uint32_t wave, uint32_t rb = 0, uint32_t re = 0) {
  format::TaskRecord t{};
  t.opcode = static_cast<uint16_t>(op);
  t.layer = layer;
  t.wave = wave;
  t.row_begin = rb;
  t.row_end = re;
  const bool qkv = op == format::Opcode::RMSNORM_GEMV;
  t.in_buf = qkv ? 1 : 2;
  t.out_buf = qkv ? 2 : 3;
  t.aux_buf = 4;
  return t;
}

std::vector<format::TaskRecord> QkvPlan() {
  std::vector<format::TaskRecord> tasks = {Task(format::Opcode::EMBED, 0, 0)};
  for (uint32_t l = 0; l < kQLayers; ++l) {
    for (uint32_t r = 0; r < 32; r += 8) tasks.push_back(Task(format::Opcode::RMSNORM_GEMV, l, 1 + 3 * l, r, r + 8));
    for (uint32_t kv = 0; kv < kQKvHeads; ++kv) tasks.push_back(Task(format::Opcode::ATTENTION, l, 2 + 3 * l));
    tasks.push_back(Task(format::Opcode::ATTN_OUT, l, 3 + 3 * l));
  }
  return tasks;
}

std::string QkvCheck(const std::vector<format::TaskRecord>& tasks, uint16_t* producers, uint32_t* mask,
                     int waves = kQWaves) {
  return QkvCountersPlanError(tasks.data(), tasks.size(), waves, kQLayers, kQHeads, kQKvHeads, kQHeadDim, producers,
                              mask);
}

TEST(QkvCountersPlanTest, CountsEachKvHeadsProducersAndMarksTheQkvWaves) {
  uint16_t producers[kGpuMaxKvHeads] = {};
  uint32_t mask[kMaxBarrierMaskWaves / 32] = {};
  mask[3] = 7;  // cleared by the check
  ASSERT_EQ(QkvCheck(QkvPlan(), producers, mask), "");
  // rows 0-7 and 16-23 and 24-31 touch K/V head 0; rows 8-15, 16-23 and 24-31 K/V head 1
  EXPECT_EQ(producers[0], 3);
  EXPECT_EQ(producers[1], 3);
  EXPECT_EQ(mask[0], (1u << 1) | (1u << 4));
  EXPECT_EQ(mask[3], 0u);
}

TEST(QkvCountersPlanTest, QkvTouchesFollowsTheRowLayout) {
  EXPECT_TRUE(QkvTouches(0, 1, 0, kQHeadDim, 2, kQHeads, kQKvHeads));
  EXPECT_FALSE(QkvTouches(0, 8, 1, kQHeadDim, 2, kQHeads, kQKvHeads));   // head 0's q only
  EXPECT_TRUE(QkvTouches(23, 24, 1, kQHeadDim, 2, kQHeads, kQKvHeads));  // head 1's last k row
  EXPECT_FALSE(QkvTouches(20, 24, 0, kQHeadDim, 2, kQHeads, kQKvHeads));
  EXPECT_TRUE(QkvTouches(31, 32, 1, kQHeadDim, 2, kQHeads, kQKvHeads));  // head 1's last v row
}

TEST(QkvCountersPlanTest, RefusesLayersFedDifferently) {
  auto tasks = QkvPlan();
  for (auto& t : tasks) {  // layer 1's QKV rows in halves: K/V head 0 fed by 2 tasks there
    if (t.layer == 1 && t.opcode == static_cast<uint16_t>(format::Opcode::RMSNORM_GEMV)) {
      t.row_begin = t.row_begin < 16 ? 0 : 16;
      t.row_end = t.row_begin + 16;
    }
  }
  uint16_t producers[kGpuMaxKvHeads] = {};
  uint32_t mask[kMaxBarrierMaskWaves / 32] = {};
  EXPECT_NE(QkvCheck(tasks, producers, mask).find("same number"), std::string::npos) << QkvCheck(tasks, producers, mask);
}

TEST(QkvCountersPlanTest, RefusesAKvHeadNoQkvTaskFeeds) {
  std::vector<format::TaskRecord> tasks;
  for (const auto& t : QkvPlan()) {  // drop the tasks of rows 8-15 (head 1's q) and 16-31 (k and v)
    if (t.opcode == static_cast<uint16_t>(format::Opcode::RMSNORM_GEMV) && t.row_begin >= 8) continue;
    tasks.push_back(t);
  }
  uint16_t producers[kGpuMaxKvHeads] = {};
  uint32_t mask[kMaxBarrierMaskWaves / 32] = {};
  EXPECT_NE(QkvCheck(tasks, producers, mask).find("K/V head 1 of layer 0 has 0"), std::string::npos)
      << QkvCheck(tasks, producers, mask);
}

TEST(QkvCountersPlanTest, RefusesWavesOutOfShape) {
  uint16_t producers[kGpuMaxKvHeads] = {};
  uint32_t mask[kMaxBarrierMaskWaves / 32] = {};
  auto apart = QkvPlan();  // layer 0's ATTENTION two waves after its QKV
  for (auto& t : apart) {
    if (t.layer == 0 && t.opcode == static_cast<uint16_t>(format::Opcode::ATTENTION)) t.wave = 3;
  }
  EXPECT_NE(QkvCheck(apart, producers, mask).find("right after its QKV wave"), std::string::npos);
  auto mixed = QkvPlan();  // an ATTN_OUT task in layer 1's QKV wave
  mixed.push_back(Task(format::Opcode::ATTN_OUT, 1, 4));
  EXPECT_NE(QkvCheck(mixed, producers, mask).find("hold nothing else"), std::string::npos);
  auto split = QkvPlan();  // layer 0's QKV over two waves
  split[1].wave = 0;
  EXPECT_NE(QkvCheck(split, producers, mask).find("in one wave"), std::string::npos);
  auto late = QkvPlan();  // layer 1's QKV and ATTENTION waves past the mask
  for (auto& t : late) {
    if (t.layer == 1) t.wave += kMaxBarrierMaskWaves;
  }
  EXPECT_NE(QkvCheck(late, producers, mask, 2 * kMaxBarrierMaskWaves).find("QKV waves below"), std::string::npos);
}

TEST(QkvCountersPlanTest, RefusesBuffersTheSkippedBarrierWouldNotOrder) {
  uint16_t producers[kGpuMaxKvHeads] = {};
  uint32_t mask[kMaxBarrierMaskWaves / 32] = {};
  auto reads_other = QkvPlan();  // an ATTENTION task reading another buffer than the QKV output
  reads_other[5].in_buf = 3;
  ASSERT_EQ(reads_other[5].opcode, static_cast<uint16_t>(format::Opcode::ATTENTION));
  EXPECT_NE(QkvCheck(reads_other, producers, mask).find("read the QKV output"), std::string::npos);
  auto overwrites = QkvPlan();  // an ATTENTION task writing the QKV input
  overwrites[5].out_buf = 1;
  EXPECT_NE(QkvCheck(overwrites, producers, mask).find("write neither"), std::string::npos);
  auto two_outputs = QkvPlan();  // layer 0's QKV tasks writing two buffers
  two_outputs[2].out_buf = 5;
  EXPECT_NE(QkvCheck(two_outputs, producers, mask).find("read one buffer and write one"), std::string::npos);
}

}  // namespace
}  // namespace tileinfer
