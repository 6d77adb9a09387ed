// The worker's L2 prefetch table (WorkerParams::l2_table): for each worker and wave, where
// the weights of the worker's tasks in that wave begin. The worker asks L2 for them some
// waves early (GpuOptions::l2_prefetch_ahead), so that a weight wave's first loads, which
// otherwise wait ~1-2 us for DRAM behind a grid barrier, find their lines in L2.
#pragma once

#include <cstdint>
#include <vector>

#include "cuda/worker.h"
#include "host/package.h"

namespace tileinfer {

// Bytes [offset, offset + bytes) of the package's weights section that a task reads first:
// RMSNORM_GEMV and LM_HEAD their rows of `weight` (hidden BF16 values a row), ATTN_OUT its
// rows of Wo (q_dim values a row), FFN its rows of gate and of up (hidden values a row; its
// rows of down^T are read last and are left out). Other opcodes read no weights, or a row
// that depends on the token (EMBED): none.
struct WeightRange {
  uint64_t offset;
  uint64_t bytes;
};
std::vector<WeightRange> TaskLeadingWeights(const Package& pkg, const format::TaskRecord& task);

// The table of WorkerParams::l2_table, workers x waves x kL2RangesPerWave entries, for
// weights uploaded at device address `weights_address` (16-byte aligned). Entry (b, v, k):
// the k-th range of worker b's tasks in wave v, in task order; the wave's ranges take at most
// `cap_bytes` together (an FFN task's gate and up rows half each), each shrunk to whole
// 16-byte units inside the range; unused entries have bytes 0. Throws Error when cap_bytes
// is outside 16 .. 2^30 or weights_address is not 16-byte aligned.
std::vector<L2PrefetchRange> L2PrefetchTable(const Package& pkg, uint64_t weights_address, uint64_t cap_bytes);

}  // namespace tileinfer
