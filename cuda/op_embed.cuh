// EMBED: x0[r] = fix(embed[token, r])   embed: (V, H) bf16, x0: (H,) FIXED64, r in [row_begin, row_end)
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

__device__ __forceinline__ void OpEmbed(const format::TaskRecord& t, const StepContext& c) {
  const uint16_t* row = c.Bf16Tensor(t.weight) + static_cast<size_t>(c.token) * c.p.hidden;
  long long* out = c.Fixed(t.out_buf);
  for (uint32_t r = t.row_begin + threadIdx.x; r < t.row_end; r += kThreads) {
    out[r] = Fix(Bf16(__ldg(row + r)), c.p.residual_invalid);
  }
}

}  // namespace device
}  // namespace tileinfer
