// EMBED: x0[r] = embed[token, r]   embed: (V, H) bf16, x0: (H,) f32, r in [row_begin, row_end)
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

__device__ __forceinline__ void OpEmbed(const format::TaskRecord& t, const StepContext& c) {
  const uint16_t* row = c.Bf16Tensor(t.weight) + static_cast<size_t>(c.token) * c.p.hidden;
  float* out = c.F32(t.out_buf);
  for (uint32_t r = t.row_begin + threadIdx.x; r < t.row_end; r += kThreads) out[r] = Bf16(__ldg(row + r));
}

}  // namespace device
}  // namespace tileinfer
