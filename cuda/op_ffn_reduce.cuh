// FFN_REDUCE: x0[r] = x1[r] + sum_{s=0}^{parts-1} part[s, r]   (s in order: no atomics, same
// bits every run)   part: (parts, H) f32, r in [row_begin, row_end)
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

__device__ __forceinline__ void OpFfnReduce(const format::TaskRecord& t, const StepContext& c) {
  const int H = c.p.hidden;
  const float* part = c.F32(t.in_buf);
  const float* resid = c.F32(t.aux_buf);
  float* out = c.F32(t.out_buf);
  for (uint32_t r = t.row_begin + threadIdx.x; r < t.row_end; r += kThreads) {
    float sum = 0;
    for (uint32_t s = 0; s < t.param0; ++s) sum += part[static_cast<size_t>(s) * H + r];
    out[r] = resid[r] + sum;
  }
}

}  // namespace device
}  // namespace tileinfer
