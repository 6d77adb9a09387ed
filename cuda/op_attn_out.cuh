// ATTN_OUT: merge the attention chunks of every head, project with Wo, add the residual.
//   m* = max_c m_c,  o_h = sum_c o_c e^(m_c - m*) / sum_c l_c e^(m_c - m*)   (chunks in order)
//   x1[r] = x0[r] + sum_k Wo[r,k] * o[k]     Wo: (H, Q) bf16, r in [row_begin, row_end)
// Every task merges all heads itself (Q floats from L2) rather than waiting for a merge wave.
// Chunks are added in index order; empty chunks (m = -inf, l = 0) contribute nothing and
// are skipped without being read.
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

__device__ __forceinline__ void OpAttnOut(const format::TaskRecord& t, const StepContext& c) {
  const WorkerParams& p = c.p;
  const int HD = p.head_dim, Q = p.heads * HD, stride = HD + 2;
  const int n_chunks = static_cast<int>(t.param1);
  const float* part = c.F32(t.in_buf);
  // Chunks that hold no position (all but the last below min_chunk positions) are skipped:
  // chunk ch is non-empty iff ch >= n_chunks - ceil(ctx / span) (see op_attention.cuh).
  const int ctx = c.pos + 1;
  const int span = max((ctx + n_chunks - 1) / n_chunks, p.attention_min_chunk);
  const int first = max(0, n_chunks - (ctx + span - 1) / span);
  float* attn = c.smem;
  for (int i = threadIdx.x; i < Q; i += kThreads) {
    const int h = i / HD, d = i % HD;
    float mx = -INFINITY;
    for (int ch = first; ch < n_chunks; ++ch) mx = fmaxf(mx, part[(static_cast<size_t>(ch) * p.heads + h) * stride + HD]);
    float l = 0, o = 0;
#pragma unroll 4
    for (int ch = first; ch < n_chunks; ++ch) {
      const float* pc = part + (static_cast<size_t>(ch) * p.heads + h) * stride;
      const float wgt = expf(pc[HD] - mx);
      l += pc[HD + 1] * wgt;
      o += pc[d] * wgt;
    }
    attn[i] = o / l;
  }
  __syncthreads();
  const float* resid = c.F32(t.aux_buf);
  float* out = c.F32(t.out_buf);
  const bool lane0 = (threadIdx.x & 31) == 0;
  WarpRowsGemv(t, c, c.Bf16Tensor(t.weight), attn, Q, [&](uint32_t r, float y) {
    if (lane0) out[r] = resid[r] + y;
  });
  __syncthreads();
}

}  // namespace device
}  // namespace tileinfer
