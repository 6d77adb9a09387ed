// ATTENTION: one K/V head x one context chunk, partial softmax state per query head.
//   q_h = RoPE(qkv[h*HD : (h+1)*HD], pos) for the `group` query heads of K/V head kv
//   the last chunk first appends K = RoPE(k, pos) and V of position pos to the cache (BF16)
//   over positions j of the chunk:  s_j = q_h . K_j / sqrt(HD)
//   out[(chunk*NH + h)*(HD+2) ...] = (o = sum_j e^(s_j - m) V_j,  m = max_j s_j,  l = sum_j e^(s_j - m))
// Chunk c of C covers [max(0, ctx-(C-c)*S), max(0, ctx-(C-1-c)*S)), S = max(ceil(ctx/C), min_chunk).
// Each warp keeps an online softmax (Milakov & Gimelshein 2018) over its positions; warps
// are merged in index order, so the result does not depend on timing.
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

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

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  float m[kGpuMaxGroup], l[kGpuMaxGroup], o[kGpuMaxGroup][kMaxDimsPerLane];
#pragma unroll
  for (int h = 0; h < kGpuMaxGroup; ++h) {
    m[h] = -INFINITY;
    l[h] = 0;
#pragma unroll
    for (int i = 0; i < kMaxDimsPerLane; ++i) o[h][i] = 0;
  }
  for (int j = begin + warp; j < end; j += kWarps) {
    float kr[kMaxDimsPerLane], vr[kMaxDimsPerLane];
    const uint16_t* krow = kc + static_cast<size_t>(j) * KV + kv * HD;
    const uint16_t* vrow = vc + static_cast<size_t>(j) * KV + kv * HD;
#pragma unroll
    for (int i = 0; i < kMaxDimsPerLane; ++i) {
      const int d = lane + 32 * i;
      kr[i] = d < HD ? Bf16(krow[d]) : 0.0f;
      vr[i] = d < HD ? Bf16(vrow[d]) : 0.0f;
    }
#pragma unroll
    for (int h = 0; h < kGpuMaxGroup; ++h) {
      if (h >= group) break;
      float part = 0;
#pragma unroll
      for (int i = 0; i < kMaxDimsPerLane; ++i) {
        const int d = lane + 32 * i;
        if (d < HD) part += q[h * HD + d] * kr[i];
      }
      const float s = WarpSum(part) * scale;
      const float m_new = fmaxf(m[h], s);
      const float corr = expf(m[h] - m_new);  // 0 on the first position (m = -inf)
      const float e = expf(s - m_new);
      l[h] = l[h] * corr + e;
#pragma unroll
      for (int i = 0; i < kMaxDimsPerLane; ++i) o[h][i] = o[h][i] * corr + e * vr[i];
      m[h] = m_new;
    }
  }
  // Per-warp states -> shared memory: [warp][h][HD + 2]
  float* state = c.smem + group * HD;
  const int stride = HD + 2;
#pragma unroll
  for (int h = 0; h < kGpuMaxGroup; ++h) {
    if (h >= group) break;
    float* s = state + (warp * group + h) * stride;
#pragma unroll
    for (int i = 0; i < kMaxDimsPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < HD) s[d] = o[h][i];
    }
    if (lane == 0) {
      s[HD] = m[h];
      s[HD + 1] = l[h];
    }
  }
  __syncthreads();
  float* out = c.F32(t.out_buf) + (static_cast<size_t>(chunk) * p.heads + kv * group) * stride;
  for (int i = threadIdx.x; i < group * stride; i += kThreads) {
    const int h = i / stride, d = i % stride;
    float mx = -INFINITY;
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, state[(w * group + h) * stride + HD]);
    float value;
    if (mx == -INFINITY) {  // an empty chunk
      value = d == HD ? -INFINITY : 0.0f;
    } else if (d == HD) {
      value = mx;
    } else {
      value = 0;
      for (int w = 0; w < kWarps; ++w) {
        const float* s = state + (w * group + h) * stride;
        if (s[HD + 1] == 0.0f) continue;  // this warp saw no position
        value += s[d] * expf(s[HD] - mx);
      }
    }
    out[i] = value;
  }
  __syncthreads();
}

}  // namespace device
}  // namespace tileinfer
