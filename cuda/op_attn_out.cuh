// ATTN_OUT: merge the attention chunks of every head, project with Wo, add the residual.
//   m* = max_c m_c,  o_h = sum_c o_c e^(m_c - m*) / sum_c l_c e^(m_c - m*)   (chunks in order)
//   x1[r] = x0[r] + sum_k Wo[r,k] * o[k]     Wo: (H, Q) bf16, r in [row_begin, row_end)
// Every task merges all heads itself (Q floats from L2) rather than waiting for a merge wave.
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

__device__ __forceinline__ void OpAttnOut(const format::TaskRecord& t, const StepContext& c) {
  const WorkerParams& p = c.p;
  const int HD = p.head_dim, Q = p.heads * HD, stride = HD + 2;
  const int n_chunks = static_cast<int>(t.param1);
  const float* part = c.F32(t.in_buf);
  float* attn = c.smem;
  for (int i = threadIdx.x; i < Q; i += kThreads) {
    const int h = i / HD, d = i % HD;
    float mx = -INFINITY;
    for (int ch = 0; ch < n_chunks; ++ch) mx = fmaxf(mx, part[(static_cast<size_t>(ch) * p.heads + h) * stride + HD]);
    float l = 0, o = 0;
    for (int ch = 0; ch < n_chunks; ++ch) {
      const float* pc = part + (static_cast<size_t>(ch) * p.heads + h) * stride;
      if (pc[HD + 1] == 0.0f) continue;  // an empty chunk
      const float wgt = expf(pc[HD] - mx);
      l += pc[HD + 1] * wgt;
      o += pc[d] * wgt;
    }
    attn[i] = o / l;
  }
  __syncthreads();
  const uint16_t* w = c.Bf16Tensor(t.weight);
  const float* resid = c.F32(t.aux_buf);
  float* out = c.F32(t.out_buf);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (uint32_t r = t.row_begin + warp; r < t.row_end; r += kWarps) {
    const float y = WarpDotBf16(w + static_cast<size_t>(r) * Q, attn, Q);
    if (lane == 0) out[r] = resid[r] + y;
  }
  __syncthreads();
}

}  // namespace device
}  // namespace tileinfer
