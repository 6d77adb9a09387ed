// RMSNORM_GEMV: y[r] = sum_k W[r,k] * rmsnorm(x)[k]
//   W: (rows, K) bf16, x: (K,) f32, g: (K,) bf16, y: (rows,) f32, r in [row_begin, row_end)
//   rmsnorm(x)[k] = x[k] * g[k] / sqrt(mean(x^2) + eps)
// Every task recomputes the norm of its whole input: a K-float read and one reduction,
// instead of a separate norm wave and its barrier. One warp per output row. With
// WorkerParams::qkv_counters (v31) the task then adds 1 to the counter of every K/V head whose
// rows it wrote, and no grid barrier follows the wave: ATTENTION waits on the counters.
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

__device__ __forceinline__ void OpRmsNormGemv(const format::TaskRecord& t, const StepContext& c,
                                              int k) {
  float* xn = c.smem;
  RmsNormToShared(c.F32(t.in_buf), c.Bf16Tensor(t.norm), k, c.p.rms_norm_eps, xn, c.scratch);
  PhaseMark(c, 0);
  float* out = c.F32(t.out_buf);
  const bool lane0 = (threadIdx.x & 31) == 0;
  WarpRowsGemv(t, c, c.Bf16Tensor(t.weight), xn, k, [&](uint32_t r, float y) {
    if (lane0) out[r] = y;
  });
  __syncthreads();  // xn is reused by this block's next task; the rows are written
  const WorkerParams& p = c.p;
  if (p.qkv_counters != nullptr && threadIdx.x == 0) {  // v31: each K/V head these rows feed (release)
    const int group = p.heads / p.kv_heads;
    for (int h = 0; h < p.kv_heads; ++h) {
      if (QkvTouches(t.row_begin, t.row_end, h, p.head_dim, group, p.heads, p.kv_heads)) {
        AddRelease(p.qkv_counters + t.layer * p.kv_heads + h);
      }
    }
  }
}

}  // namespace device
}  // namespace tileinfer
