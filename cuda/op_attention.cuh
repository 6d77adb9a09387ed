// ATTENTION: one K/V head x one context chunk, partial softmax state per query head.
//   q_h = RoPE(qkv[h*HD : (h+1)*HD], pos) for the `group` query heads of K/V head kv
//   the last chunk first appends K = RoPE(k, pos) and V of position pos to the cache (BF16)
//   over positions j of the chunk:  s_j = q_h . K_j / sqrt(HD)
//   out[(chunk*NH + h)*(HD+2) ...] = (o = sum_j e^(s_j - m) V_j,  m = max_j s_j,  l = sum_j e^(s_j - m))
// Chunk c of C covers [max(0, ctx-(C-c)*S), max(0, ctx-(C-1-c)*S)), S = max(ceil(ctx/C), min_chunk).
// Each warp keeps an online softmax (Milakov & Gimelshein 2018) over its positions, updated
// once per batch of kAttnBatch positions; warps are merged in index order, so the result
// does not depend on timing.
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

// The chunk's positions [begin, end) against the group's queries q (shared memory), per warp
// an online softmax state, written to `state` ([warp][h][HD + 2]: o, m, l). G >= group query
// heads and DPL >= HD / 32 dims per lane, fixed at compile time so that the state fits in
// registers. B: positions per warp whose K/V loads fly together (one rescale per batch).
template <int G, int DPL, int B>
__device__ __forceinline__ void AttendChunk(const float* q, const uint16_t* kc, const uint16_t* vc, int KV, int kv,
                                            int HD, int group, int begin, int end, float* state) {
  constexpr int kAttnBatch = B;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  float m[G], l[G], o[G][DPL];
#pragma unroll
  for (int h = 0; h < G; ++h) {
    m[h] = -INFINITY;
    l[h] = 0;
#pragma unroll
    for (int i = 0; i < DPL; ++i) o[h][i] = 0;
  }
  // Positions in batches of kAttnBatch per warp (j0 + u * kWarps): every K and V load of a
  // batch is issued before the first is used, and the softmax state is rescaled once per
  // batch, so a warp waits one memory latency per batch instead of one per position.
  for (int j0 = begin + warp; j0 < end; j0 += kWarps * kAttnBatch) {
    float kr[kAttnBatch][DPL], vr[kAttnBatch][DPL];
#pragma unroll
    for (int u = 0; u < kAttnBatch; ++u) {
      const int j = j0 + u * kWarps;
      const uint16_t* krow = kc + static_cast<size_t>(j) * KV + kv * HD;
      const uint16_t* vrow = vc + static_cast<size_t>(j) * KV + kv * HD;
#pragma unroll
      for (int i = 0; i < DPL; ++i) {
        const int d = lane + 32 * i;
        const bool ok = j < end && d < HD;
        kr[u][i] = ok ? Bf16(krow[d]) : 0.0f;
        vr[u][i] = ok ? Bf16(vrow[d]) : 0.0f;
      }
    }
#pragma unroll
    for (int h = 0; h < G; ++h) {
      if (h >= group) break;
      float sc[kAttnBatch];
      float m_new = m[h];
#pragma unroll
      for (int u = 0; u < kAttnBatch; ++u) {
        float part = 0;
#pragma unroll
        for (int i = 0; i < DPL; ++i) {
          const int d = lane + 32 * i;
          if (d < HD) part += q[h * HD + d] * kr[u][i];
        }
        sc[u] = j0 + u * kWarps < end ? WarpSum(part) * scale : -INFINITY;
        m_new = fmaxf(m_new, sc[u]);
      }
      const float corr = expf(m[h] - m_new);  // 0 on the first batch (m = -inf); m_new is finite
      l[h] *= corr;
#pragma unroll
      for (int i = 0; i < DPL; ++i) o[h][i] *= corr;
#pragma unroll
      for (int u = 0; u < kAttnBatch; ++u) {
        const float e = expf(sc[u] - m_new);  // 0 past the chunk's end
        l[h] += e;
#pragma unroll
        for (int i = 0; i < DPL; ++i) o[h][i] += e * vr[u][i];
      }
      m[h] = m_new;
    }
  }
  // Per-warp states -> shared memory: [warp][h][HD + 2]
  const int stride = HD + 2;
#pragma unroll
  for (int h = 0; h < G; ++h) {
    if (h >= group) break;
    float* s = state + (warp * group + h) * stride;
#pragma unroll
    for (int i = 0; i < DPL; ++i) {
      const int d = lane + 32 * i;
      if (d < HD) s[d] = o[h][i];
    }
    if (lane == 0) {
      s[HD] = m[h];
      s[HD + 1] = l[h];
    }
  }
}

__device__ __forceinline__ void OpAttention(const format::TaskRecord& t, const StepContext& c) {
  const WorkerParams& p = c.p;
  const int HD = p.head_dim, half = HD / 2, KV = p.kv_heads * HD, Q = p.heads * HD;
  const int group = p.heads / p.kv_heads;
  const int kv = static_cast<int>(t.param0), chunk = static_cast<int>(t.slot);
  const int n_chunks = static_cast<int>(t.param1), min_chunk = static_cast<int>(t.param2);
  const int ctx = c.pos + 1;
  const int span = max((ctx + n_chunks - 1) / n_chunks, min_chunk);
  const int begin = max(0, ctx - (n_chunks - chunk) * span);
  const int end = max(0, ctx - (n_chunks - 1 - chunk) * span);
  const float* qkv = c.F32(t.in_buf);
  const float* inv_freq = static_cast<const float*>(p.tensors[t.weight2]);
  uint16_t* kc = static_cast<uint16_t*>(p.buffers[t.aux_buf]) + static_cast<size_t>(t.layer) * 2 * p.max_context * KV;
  uint16_t* vc = kc + static_cast<size_t>(p.max_context) * KV;

  float* q = c.smem;  // (group, HD) roped queries
  for (int i = threadIdx.x; i < group * half; i += kThreads) {
    const int h = i / half, d = i % half;
    const float* qh = qkv + (kv * group + h) * HD;
    float s, co;
    sincosf(static_cast<float>(c.pos) * inv_freq[d], &s, &co);
    const float a = qh[d], b = qh[d + half];
    q[h * HD + d] = a * co - b * s;
    q[h * HD + d + half] = b * co + a * s;
  }
  if (chunk == n_chunks - 1) {  // owner of position pos
    const float* k = qkv + Q + kv * HD;
    const float* v = qkv + Q + KV + kv * HD;
    uint16_t* krow = kc + static_cast<size_t>(c.pos) * KV + kv * HD;
    uint16_t* vrow = vc + static_cast<size_t>(c.pos) * KV + kv * HD;
    for (int d = threadIdx.x; d < half; d += kThreads) {
      float s, co;
      sincosf(static_cast<float>(c.pos) * inv_freq[d], &s, &co);
      const float a = k[d], b = k[d + half];
      krow[d] = ToBf16(a * co - b * s);
      krow[d + half] = ToBf16(b * co + a * s);
    }
    for (int d = threadIdx.x; d < HD; d += kThreads) vrow[d] = ToBf16(v[d]);
  }
  __syncthreads();  // queries ready; this block's K/V row visible to its own warps
  PhaseMark(c, 0);

  float* state = c.smem + group * HD;
  // Batches only where a warp has more than one batch of positions: in a short chunk a
  // batch's slots past the end cost their reductions and win nothing (v18).
  const bool batched = end - begin > 4 * kWarps;  // uniform over the block
  if (HD <= 64) {
    if (group <= 4) {
      if (batched) AttendChunk<4, 2, 4>(q, kc, vc, KV, kv, HD, group, begin, end, state);
      else AttendChunk<4, 2, 1>(q, kc, vc, KV, kv, HD, group, begin, end, state);
    } else {
      if (batched) AttendChunk<kGpuMaxGroup, 2, 4>(q, kc, vc, KV, kv, HD, group, begin, end, state);
      else AttendChunk<kGpuMaxGroup, 2, 1>(q, kc, vc, KV, kv, HD, group, begin, end, state);
    }
  } else {
    if (batched) AttendChunk<kGpuMaxGroup, kMaxDimsPerLane, 2>(q, kc, vc, KV, kv, HD, group, begin, end, state);
    else AttendChunk<kGpuMaxGroup, kMaxDimsPerLane, 1>(q, kc, vc, KV, kv, HD, group, begin, end, state);
  }
  const int stride = HD + 2;
  __syncthreads();
  PhaseMark(c, 1);
  // The warps' states merged per query head: m* = max_w m_w, and each warp's weight
  // e_w = e^(m_w - m*) once per (warp, head), not once per output element; then
  // o = sum_w o_w e_w and l = sum_w l_w e_w, warps in index order. A warp that saw no position
  // (o and l +0) gets e_w = -0: its terms +0 * -0 = -0 leave every sum as skipping the warp
  // would (v + -0 == v, -0 included). An empty chunk (m* = -inf) writes (0, -inf, 0).
  float* wgt = state + kWarps * group * stride;  // (kWarps, group)
  float* mxs = wgt + kWarps * group;             // (group)
  for (int i = threadIdx.x; i < kWarps * group; i += kThreads) {
    const int w = i / group, h = i - w * group;
    float mx = -INFINITY;
    for (int v = 0; v < kWarps; ++v) mx = fmaxf(mx, state[(v * group + h) * stride + HD]);
    const float* s = state + (w * group + h) * stride;
    wgt[i] = s[HD + 1] == 0.0f ? -0.0f : expf(s[HD] - mx);
    if (w == 0) mxs[h] = mx;
  }
  __syncthreads();
  float* out = c.F32(t.out_buf) + (static_cast<size_t>(chunk) * p.heads + kv * group) * stride;
  for (int i = threadIdx.x; i < group * stride; i += kThreads) {
    const int h = i / stride, d = i - h * stride;
    const float mx = mxs[h];
    float value;
    if (mx == -INFINITY) {  // an empty chunk
      value = d == HD ? -INFINITY : 0.0f;
    } else if (d == HD) {
      value = mx;
    } else {
      value = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) value += state[(w * group + h) * stride + d] * wgt[w * group + h];
    }
    out[i] = value;
  }
  __syncthreads();
}

}  // namespace device
}  // namespace tileinfer
