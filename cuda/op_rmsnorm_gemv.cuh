// RMSNORM_GEMV: y[r] = sum_k W[r,k] * rmsnorm(x)[k]
//   W: (rows, K) bf16, x: (K,) the FIXED64 residual, g: (K,) bf16, y: (rows,) f32,
//   r in [row_begin, row_end)
//   rmsnorm(x)[k] = x[k] * g[k] / sqrt(mean(x^2) + eps)
// Every task recomputes the norm of its whole input: a K-float read and one reduction,
// instead of a separate norm wave and its barrier. One warp per output row.
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

template <bool kWide = false>
__device__ __forceinline__ void OpRmsNormGemv(const format::TaskRecord& t, const StepContext& c,
                                              int k) {
  float* xn = c.smem;
  RmsNormToShared<kWide>(c.Fixed(t.in_buf), c.Bf16Tensor(t.norm), k, c.p.rms_norm_eps, xn, c.scratch);
  PhaseMark(c, 0);
  float* out = c.F32(t.out_buf);
  const bool lane0 = (threadIdx.x & 31) == 0;
  // Triples in the wide kernel only: a warp holds three rows or more at 33 rows a task (the 3B's
  // QKV: 40), which the narrow kernel's models (the 1B: 24, SmolLM2: 7-8) do not reach by
  // default; the sums are the same either way (WarpRowsGemv).
  WarpRowsGemv<kWide, kWide>(t, c, c.Bf16Tensor(t.weight), xn, k, [&](uint32_t r, float y) {
    if (lane0) out[r] = y;
  });
  __syncthreads();  // xn is reused by this block's next task
}

}  // namespace device
}  // namespace tileinfer
