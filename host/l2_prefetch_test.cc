// The L2 prefetch table (host/l2_prefetch.h) on the golden packages, against each task's rows
// located from the tensor records' own shapes (not the model config the builder uses).
#include "host/l2_prefetch.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "host/error.h"
#include "host/package.h"
#include "tests/golden/golden_path.h"

namespace tileinfer {
namespace {

constexpr uint64_t kBase = 0x7f0000000000;  // a device address, 16-byte aligned

// The entries of (worker, wave).
std::vector<L2PrefetchRange> Slot(const std::vector<L2PrefetchRange>& table, const Package& pkg, uint32_t worker,
                                  uint32_t wave) {
  const size_t at = (static_cast<size_t>(worker) * pkg.plan().waves + wave) * kL2RangesPerWave;
  std::vector<L2PrefetchRange> used;
  for (int k = 0; k < kL2RangesPerWave && table[at + k].bytes > 0; ++k) used.push_back(table[at + k]);
  for (int k = static_cast<int>(used.size()); k < kL2RangesPerWave; ++k) EXPECT_EQ(table[at + k].bytes, 0u);
  return used;
}

// [begin, end) of rows [row_begin, row_end) of tensor `id`, from its record's shape.
std::pair<uint64_t, uint64_t> Rows(const Package& pkg, uint32_t id, const format::TaskRecord& t) {
  const format::TensorRecord& r = pkg.tensors()[id];
  const uint64_t row_bytes = static_cast<uint64_t>(r.cols) * 2;
  EXPECT_LE(t.row_end, r.rows);
  return {kBase + r.offset + t.row_begin * row_bytes, kBase + r.offset + t.row_end * row_bytes};
}

class L2PrefetchGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(L2PrefetchGolden, EveryWeightTaskIsTableEntryOfItsWorkerAndWave) {
  const auto pkg = Package::Open(GoldenPath(GetParam()));
  const auto table = L2PrefetchTable(*pkg, kBase, uint64_t{1} << 30);
  ASSERT_EQ(table.size(), static_cast<size_t>(pkg->plan().workers) * pkg->plan().waves * kL2RangesPerWave);
  int gemv = 0, ffn = 0;
  for (const format::TaskRecord& t : pkg->tasks()) {
    const auto slot = Slot(table, *pkg, t.worker, t.wave);
    std::vector<uint32_t> tensors;
    switch (static_cast<format::Opcode>(t.opcode)) {
      case format::Opcode::RMSNORM_GEMV:
      case format::Opcode::ATTN_OUT:
      case format::Opcode::LM_HEAD: tensors = {t.weight}; ++gemv; break;
      case format::Opcode::FFN: tensors = {t.weight, t.weight2}; ++ffn; break;
      default: continue;
    }
    for (const uint32_t id : tensors) {
      const auto [begin, end] = Rows(*pkg, id, t);
      const uint64_t first = (begin + 15) & ~uint64_t{15}, last = end & ~uint64_t{15};
      bool found = false;
      for (const L2PrefetchRange& e : slot) found |= e.address == first && e.address + e.bytes == last;
      EXPECT_TRUE(found) << "opcode " << t.opcode << " worker " << t.worker << " wave " << t.wave << " tensor " << id;
    }
  }
  EXPECT_GT(gemv, 0);
  EXPECT_GT(ffn, 0);
  // Waves with no weight task of the worker (EMBED, ATTENTION, FFN_REDUCE) have no entry.
  for (uint32_t w = 0; w < static_cast<uint32_t>(pkg->plan().workers); ++w) {
    for (uint32_t v = 0; v < static_cast<uint32_t>(pkg->plan().waves); ++v) {
      bool weights = false;
      for (const format::TaskRecord& t : pkg->tasks()) {
        weights |= t.worker == w && t.wave == v && !TaskLeadingWeights(*pkg, t).empty();
      }
      if (!weights) EXPECT_TRUE(Slot(table, *pkg, w, v).empty()) << "worker " << w << " wave " << v;
    }
  }
}

TEST_P(L2PrefetchGolden, CapBoundsEachWaveAndSplitsFfnInHalves) {
  const auto pkg = Package::Open(GoldenPath(GetParam()));
  const uint64_t cap = 96;
  const auto table = L2PrefetchTable(*pkg, kBase, cap);
  for (const format::TaskRecord& t : pkg->tasks()) {
    uint64_t total = 0;
    for (const L2PrefetchRange& e : Slot(table, *pkg, t.worker, t.wave)) {
      EXPECT_EQ(e.address % 16, 0u);
      EXPECT_EQ(e.bytes % 16, 0u);
      total += e.bytes;
    }
    EXPECT_LE(total, cap);
    if (t.opcode == static_cast<uint16_t>(format::Opcode::FFN)) {
      const auto slot = Slot(table, *pkg, t.worker, t.wave);
      ASSERT_GE(slot.size(), 2u);
      EXPECT_EQ(slot[0].address, (Rows(*pkg, t.weight, t).first + 15) & ~uint64_t{15});
      EXPECT_EQ(slot[1].address, (Rows(*pkg, t.weight2, t).first + 15) & ~uint64_t{15});
      EXPECT_LE(slot[0].bytes, cap / 2);
      EXPECT_LE(slot[1].bytes, cap / 2);
    }
  }
}

TEST_P(L2PrefetchGolden, BadCapOrAddressIsRefused) {
  const auto pkg = Package::Open(GoldenPath(GetParam()));
  EXPECT_THROW(L2PrefetchTable(*pkg, kBase, 8), Error);
  EXPECT_THROW(L2PrefetchTable(*pkg, kBase, (uint64_t{1} << 30) + 16), Error);
  EXPECT_THROW(L2PrefetchTable(*pkg, kBase + 8, 4096), Error);
}

INSTANTIATE_TEST_SUITE_P(Packages, L2PrefetchGolden, ::testing::Values("tiny_9x3.tpkg", "tiny_untied.tpkg"));

}  // namespace
}  // namespace tileinfer
