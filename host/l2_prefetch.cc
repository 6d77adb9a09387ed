#include "host/l2_prefetch.h"

#include <algorithm>
#include <string>

#include "host/error.h"

namespace tileinfer {

std::vector<WeightRange> TaskLeadingWeights(const Package& pkg, const format::TaskRecord& t) {
  const ModelConfig& m = pkg.model();
  const auto rows = [&](uint32_t tensor, uint64_t row_values) {
    const uint64_t row_bytes = row_values * 2;  // BF16
    return WeightRange{pkg.tensors()[tensor].offset + t.row_begin * row_bytes, (t.row_end - t.row_begin) * row_bytes};
  };
  switch (static_cast<format::Opcode>(t.opcode)) {
    case format::Opcode::RMSNORM_GEMV:
    case format::Opcode::LM_HEAD: return {rows(t.weight, m.hidden)};
    case format::Opcode::ATTN_OUT: return {rows(t.weight, m.q_dim())};
    case format::Opcode::FFN: return {rows(t.weight, m.hidden), rows(t.weight2, m.hidden)};
    default: return {};
  }
}

std::vector<L2PrefetchRange> L2PrefetchTable(const Package& pkg, uint64_t weights_address, uint64_t cap_bytes) {
  if (cap_bytes < 16 || cap_bytes > (uint64_t{1} << 30)) {
    throw Error("the L2 prefetch cap is " + std::to_string(cap_bytes) + " bytes a wave: give 16 to 2^30");
  }
  if (weights_address % 16 != 0) throw Error("the weights' device address is not 16-byte aligned");
  const PlanParams& p = pkg.plan();
  std::vector<L2PrefetchRange> table(static_cast<size_t>(p.workers) * p.waves * kL2RangesPerWave,
                                     L2PrefetchRange{0, 0, 0});
  std::vector<int> used(static_cast<size_t>(p.workers) * p.waves, 0);
  std::vector<uint64_t> left(used.size(), cap_bytes);
  for (const format::TaskRecord& t : pkg.tasks()) {
    const size_t slot = static_cast<size_t>(t.worker) * p.waves + t.wave;
    const std::vector<WeightRange> ranges = TaskLeadingWeights(pkg, t);
    const uint64_t share = ranges.empty() ? 0 : left[slot] / ranges.size();
    for (const WeightRange& r : ranges) {
      if (used[slot] == kL2RangesPerWave) break;
      const uint64_t begin = (weights_address + r.offset + 15) & ~uint64_t{15};
      const uint64_t end = std::min((weights_address + r.offset + r.bytes) & ~uint64_t{15}, begin + (share & ~uint64_t{15}));
      if (end <= begin) continue;
      table[slot * kL2RangesPerWave + used[slot]++] = L2PrefetchRange{begin, static_cast<uint32_t>(end - begin), 0};
      left[slot] -= end - begin;
    }
  }
  return table;
}

}  // namespace tileinfer
