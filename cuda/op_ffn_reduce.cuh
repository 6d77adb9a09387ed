// FFN_REDUCE: x0[r] = x1[r] + sum_{s=0}^{parts-1} part[s, r]   part: (parts, H) f32,
//   r in [row_begin, row_end)
// The sum's order is fixed (no atomics; the same bits every run): threads are (group g, row)
// pairs, group g adds parts g, g + G, g + 2G, ... in order, then the G group sums are added
// in group order. With 132 parts and ~15 rows a task, each thread has ~4 independent loads
// instead of one thread walking all 132 partials one L2 round trip at a time.
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

__device__ __forceinline__ void OpFfnReduce(const format::TaskRecord& t, const StepContext& c) {
  const int H = c.p.hidden;
  const int parts = static_cast<int>(t.param0);
  const float* part = c.F32(t.in_buf);
  const float* resid = c.F32(t.aux_buf);
  float* out = c.F32(t.out_buf);
  float* group_sums = c.smem;  // kThreads floats
  const int rows = static_cast<int>(t.row_end - t.row_begin);
  for (int r0 = 0; r0 < rows; r0 += kThreads) {
    const int n = min(rows - r0, kThreads);
    const int groups = kThreads / n;
    const int g = threadIdx.x / n, rr = threadIdx.x % n;
    const int r = static_cast<int>(t.row_begin) + r0 + rr;
    if (g < groups) {
      float sum = 0;
#pragma unroll 4
      for (int s = g; s < parts; s += groups) sum += part[static_cast<size_t>(s) * H + r];
      group_sums[g * n + rr] = sum;
    }
    __syncthreads();
    if (threadIdx.x < n) {
      float total = 0;
      for (int gg = 0; gg < groups; ++gg) total += group_sums[gg * n + threadIdx.x];
      const int ro = static_cast<int>(t.row_begin) + r0 + threadIdx.x;
      out[ro] = resid[ro] + total;
    }
    __syncthreads();
  }
}

}  // namespace device
}  // namespace tileinfer
