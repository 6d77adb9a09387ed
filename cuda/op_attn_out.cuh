// ATTN_OUT: merge the attention chunks of every head, project with Wo, add the residual.
//   m* = max_c m_c,  o_h = sum_c o_c e^(m_c - m*) / sum_c l_c e^(m_c - m*)   (chunks in order)
//   x1[r] = real(x0[r]) + sum_k Wo[r,k] * o[k];  x0[r] = fix(x1[r])
//   Wo: (H, Q) bf16, x0: the FIXED64 residual (aux_buf, read and rewritten: the FFN tasks add
//   to it next), r in [row_begin, row_end)
// Every task merges all heads itself (Q floats from L2) rather than waiting for a merge wave.
// Chunks are added in index order; empty chunks (m = -inf, l = 0) contribute nothing and
// are skipped without being read. The merge runs in three phases (every chunk's m and l;
// the per-head weights; the weighted sums, a thread's two elements with up to four chunks'
// loads at a time, the first four issued before phase 1), so that each phase's loads are in
// flight together rather than one dependent round trip per element and chunk; with one
// non-empty chunk (short contexts) it is a single phase.
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

template <bool kWide = false>
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
  const int nc = n_chunks - first;  // >= 1
  float* attn = c.smem;             // Q floats
  float* wgt = attn + Q;            // (NH, nc): m_c, then e^(m_c - m*)
  float* lc = wgt + p.heads * nc;   // (NH, nc): l_c; then [h * nc] = sum_c l_c e^(m_c - m*)
  if (nc == 1) {
    // One chunk holds every position (contexts up to min_chunk): e = e^(m - m) = 1, so
    // o = (0 + o_c * 1) / (0 + l_c * 1), the general path's values, with one round trip:
    // a thread's kOneChunkBatch elements (Q / kThreads = 4 for the 1B) are loaded before any
    // is stored (a store to `attn` would otherwise hold back the next element's loads).
    constexpr int kOneChunkBatch = 4;
    const float* pf = part + static_cast<size_t>(first) * p.heads * stride;
    for (int i0 = threadIdx.x; i0 < Q; i0 += kOneChunkBatch * kThreads) {
      float o[kOneChunkBatch], l[kOneChunkBatch];
#pragma unroll
      for (int u = 0; u < kOneChunkBatch; ++u) {
        const int i = i0 + u * kThreads, h = i / HD, d = i - h * HD;
        o[u] = i < Q ? pf[h * stride + d] : 0.0f;
        l[u] = i < Q ? pf[h * stride + HD + 1] : 1.0f;
      }
#pragma unroll
      for (int u = 0; u < kOneChunkBatch; ++u) {
        const int i = i0 + u * kThreads;
        if (i < Q) attn[i] = (0.0f + o[u]) / (0.0f + l[u]);
      }
    }
  } else {
    // Phase 3's loads (below) do not depend on the weights: a thread's first kMergeBatch
    // chunks of its first kPreloadPairs element pairs are loaded before phase 1, so that
    // their round trip runs beside phase 1's and phase 2's instead of after them.
    constexpr int kMergeBatch = 4, kPreloadPairs = 1;
    const size_t chunk_stride = static_cast<size_t>(p.heads) * stride;
    auto pair_base = [&](int i) {  // i even: elements i, i + 1 of one head (HD is even)
      const int h = i / HD, d = i - h * HD;
      return part + (static_cast<size_t>(first) * p.heads + h) * stride + d;
    };
    auto load_batch = [&](const float* pc, int k0, float2 (&v)[kMergeBatch]) {
#pragma unroll
      for (int u = 0; u < kMergeBatch; ++u) {
        v[u] = k0 + u < nc ? *reinterpret_cast<const float2*>(pc + (k0 + u) * chunk_stride) : make_float2(0, 0);
      }
    };
    float2 preload[kPreloadPairs][kMergeBatch];
#pragma unroll
    for (int q = 0; q < kPreloadPairs; ++q) {
      const int i = 2 * (threadIdx.x + q * kThreads);
      if (i < Q) load_batch(pair_base(i), 0, preload[q]);
    }
    // 1. m and l of every (head, non-empty chunk), all loads at once.
    for (int idx = threadIdx.x; idx < p.heads * nc; idx += kThreads) {
      const float* pc = part + (static_cast<size_t>(first + idx % nc) * p.heads + idx / nc) * stride;
      wgt[idx] = pc[HD];
      lc[idx] = pc[HD + 1];
    }
    __syncthreads();
    // 2. Per head: m* and each chunk's weight; the denominator, chunks in order.
    for (int h = threadIdx.x; h < p.heads; h += kThreads) {
      float mx = -INFINITY;
      for (int k = 0; k < nc; ++k) mx = fmaxf(mx, wgt[h * nc + k]);
      float l = 0;
      for (int k = 0; k < nc; ++k) {
        const float e = expf(wgt[h * nc + k] - mx);
        wgt[h * nc + k] = e;
        l += lc[h * nc + k] * e;
      }
      lc[h * nc] = l;
    }
    __syncthreads();
    // 3. o = sum_c o_c e_c / l, chunks in order. A thread takes two adjacent elements of a
    // head (HD is even, so (chunk, head) records of HD + 2 floats keep them 8-byte aligned)
    // and has kMergeBatch chunks' float2 loads in flight together: ceil(nc / 4) round trips
    // per pair instead of one per four chunks and element, the first of them preloaded.
    auto merge_pair = [&](int i, const float2 (&first_batch)[kMergeBatch]) {
      const int h = i / HD;
      const float* pc = pair_base(i);
      const float* e = wgt + h * nc;
      float o0 = 0, o1 = 0;
      for (int k0 = 0; k0 < nc; k0 += kMergeBatch) {
        float2 v[kMergeBatch];
        if (k0 == 0) {
#pragma unroll
          for (int u = 0; u < kMergeBatch; ++u) v[u] = first_batch[u];
        } else {
          load_batch(pc, k0, v);
        }
#pragma unroll
        for (int u = 0; u < kMergeBatch; ++u) {
          if (k0 + u < nc) {
            o0 += v[u].x * e[k0 + u];
            o1 += v[u].y * e[k0 + u];
          }
        }
      }
      attn[i] = o0 / lc[h * nc];
      attn[i + 1] = o1 / lc[h * nc];
    };
#pragma unroll
    for (int q = 0; q < kPreloadPairs; ++q) {
      const int i = 2 * (threadIdx.x + q * kThreads);
      if (i < Q) merge_pair(i, preload[q]);
    }
    for (int i = 2 * (threadIdx.x + kPreloadPairs * kThreads); i < Q; i += 2 * kThreads) {
      float2 first_batch[kMergeBatch];
      load_batch(pair_base(i), 0, first_batch);
      merge_pair(i, first_batch);
    }
  }
  __syncthreads();
  PhaseMark(c, 0);
  long long* resid = c.Fixed(t.aux_buf);
  float* out = c.F32(t.out_buf);
  const bool lane0 = (threadIdx.x & 31) == 0;
  WarpRowsGemv<kWide>(t, c, c.Bf16Tensor(t.weight), attn, Q, [&](uint32_t r, float y) {
    if (lane0) {
      const float x1 = Real(resid[r]) + y;
      out[r] = x1;
      resid[r] = Fix(x1, c.p.residual_invalid);
    }
  });
  __syncthreads();
}

}  // namespace device
}  // namespace tileinfer
