// RMSNORM_GEMV: y[r] = sum_k W[r,k] * rmsnorm(x)[k]
//   W: (rows, K) bf16, x: (K,) f32, g: (K,) bf16, y: (rows,) f32, r in [row_begin, row_end)
//   rmsnorm(x)[k] = x[k] * g[k] / sqrt(mean(x^2) + eps)
// Every task recomputes the norm of its whole input: a K-float read and one reduction,
// instead of a separate norm wave and its barrier. One warp per output row.
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

__device__ __forceinline__ void OpRmsNormGemv(const format::TaskRecord& t, const StepContext& c,
                                              int k) {
  float* xn = c.smem;
  RmsNormToShared(c.F32(t.in_buf), c.Bf16Tensor(t.norm), k, c.p.rms_norm_eps, xn, c.scratch);
  const uint16_t* w = c.Bf16Tensor(t.weight);
  float* out = c.F32(t.out_buf);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (uint32_t r = t.row_begin + warp; r < t.row_end; r += kWarps) {
    bool shared;
    const uint16_t* row = c.Row(w + static_cast<size_t>(r) * k, uint64_t(r - t.row_begin) * k * 2, uint64_t(k) * 2, &shared);
    const float y = WarpDotBf16(row, xn, k, shared);
    if (lane == 0) out[r] = y;
  }
  __syncthreads();  // xn is reused by this block's next task
}

}  // namespace device
}  // namespace tileinfer
