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

// The chunk's positions [begin, end) against query heads [h0, h0 + 4) of the group (q: the
// group's (group, HD) roped queries in shared memory); per warp an online softmax state,
// written to `state` ([warp][h][HD + 2]: o, m, l). kOnePass (the wide kernel, cuda/worker.h
// WorkerWide, the only one that runs head dims above 64): at lpp = 4 a lane holds 4 V dims
// (4 lane .. 4 lane + 3, one 8-byte load a V row's piece, 8 positions a tile), so one pass
// covers every head dim up to 128; at lpp = 2 the code and its sums are the narrow kernel's,
// which runs head dims up to 64 only (kNarrowMaxHeadDim) and so compiles lpp = 2 alone.
//
// Positions over lanes: lpp lanes per position (2 for HD <= 64, else 4), each holding 32 of
// its dims, so a warp takes a tile of 32 / lpp positions at once; warp w takes the tiles
// j0 = begin + tile (w + kWarps t). A lane reads its part of a K row in 16-byte loads (HD % 8
// == 0, so every piece is 16-byte aligned); the lpp parts of each score are summed by xor
// shuffles; the tile's maximum is one warp reduction per head; then every lane sums the
// tile's V rows for its dims (2 lane, + 1; at lpp = 4: 4 lane .. + 3), the weights broadcast by
// shuffles. The tile's V rows are requested together with its K rows, so a tile costs one memory round trip
// (v25c; AttendChunk waits one per position or per batch of 4). One inlined instance serves
// every shape of a kernel: a second one costs the whole worker kernel register spills (ptxas, sm_90).
// OpAttention takes it in steps whose chunks hold at least WorkerParams::attention_tile_min
// positions, when HD % 8 == 0; an empty chunk leaves every warp's state (0, -inf, 0).
template <bool kOnePass>
__device__ __forceinline__ void AttendChunkTiles(const float* q, const uint16_t* kc, const uint16_t* vc, int KV,
                                                 int kv, int HD, int group, int h0, int begin, int end, float* state) {
  constexpr int kHeads = 4;                    // query heads a pass holds in registers
  constexpr int kMaxTile = 16;                 // positions per tile at lpp = 2
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // The narrow kernel's lpp is 2: 2 lanes x 32 dims hold its largest head_dim, and the tiles' and
  // AttendChunk<4, 2, *>'s 4 query heads a pass its largest group (kNarrowMax*, WorkerWide).
  static_assert(kNarrowMaxHeadDim <= 2 * 32 && kNarrowMaxGroup <= kHeads, "the narrow kernel's attention forms");
  const int lpp = (!kOnePass || HD <= kNarrowMaxHeadDim) ? 2 : 4, tile = 32 / lpp;
  const int part = lane % lpp, slot = lane / lpp;  // this lane: dims [32 part, 32 part + 32) of position j0 + slot
  const int heads = min(kHeads, group - h0);
  const float scale = 1.0f / sqrtf(static_cast<float>(HD));
  constexpr int kDims = kOnePass ? 4 : 2;  // V dims a lane holds at most
  const bool wide_v = kOnePass && lpp == 4;  // 4 V dims a lane
  float m[kHeads], l[kHeads], o[kHeads][kDims];
#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    m[h] = -INFINITY;
    l[h] = 0;
#pragma unroll
    for (int i = 0; i < kDims; ++i) o[h][i] = 0;
  }
  for (int j0 = begin + tile * warp; j0 < end; j0 += tile * kWarps) {
    const int n = min(tile, end - j0);  // positions in this tile; slot 0's is always one
    const bool live = slot < n;
    // Plain loads, not __ldg: the cache is written in this launch (the read-only path may
    // hold a stale sector of a row appended since; the grid barrier's acquire covers L1).
    const uint16_t* vtile = vc + static_cast<size_t>(j0) * KV + kv * HD;
    const int dv = wide_v ? 4 * lane : 2 * lane;  // this lane's V dims: dv, dv + 1 (+ 2, + 3)
    uint32_t vr[kMaxTile];  // 2 V dims of position u in vr[u]; wide_v: 4 of position u in vr[2u], vr[2u + 1]
    if (wide_v) {
#pragma unroll
      for (int u = 0; u < kMaxTile / 2; ++u) {
        const uint2 w = u < n && dv < HD ? *reinterpret_cast<const uint2*>(vtile + static_cast<size_t>(u) * KV + dv)
                                         : make_uint2(0u, 0u);
        vr[2 * u] = w.x;
        vr[2 * u + 1] = w.y;
      }
    } else {
#pragma unroll
      for (int u = 0; u < kMaxTile; ++u) {
        vr[u] = u < n && dv < HD ? *reinterpret_cast<const uint32_t*>(vtile + static_cast<size_t>(u) * KV + dv) : 0u;
      }
    }
    const uint16_t* krow = kc + static_cast<size_t>(j0 + slot) * KV + kv * HD + 32 * part;
    uint32_t kr[16];  // this lane's 32 dims of its position's K row
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const uint4 v = live && 32 * part + 8 * u < HD ? reinterpret_cast<const uint4*>(krow)[u] : make_uint4(0, 0, 0, 0);
      kr[4 * u] = v.x;
      kr[4 * u + 1] = v.y;
      kr[4 * u + 2] = v.z;
      kr[4 * u + 3] = v.w;
    }
    float s[kHeads];
#pragma unroll
    for (int h = 0; h < kHeads; ++h) s[h] = 0;
#pragma unroll
    for (int piece = 0; piece < 4; ++piece) {  // 8 dims a piece; one branch a piece, not one a step
      if (32 * part + 8 * piece >= HD) break;
#pragma unroll
      for (int u = 4 * piece; u < 4 * piece + 4; ++u) {
        const int d = 32 * part + 2 * u;
        const float k0 = Bf16Lo(kr[u]), k1 = Bf16Hi(kr[u]);
#pragma unroll
        for (int h = 0; h < kHeads; ++h) {
          const float* qh = q + min(h0 + h, group - 1) * HD + d;
          s[h] += qh[0] * k0;
          s[h] += qh[1] * k1;
        }
      }
    }
    float p[kHeads];
#pragma unroll
    for (int h = 0; h < kHeads; ++h) {  // no break: see the V sum below
      s[h] += __shfl_xor_sync(0xffffffffu, s[h], 1);
      if (lpp == 4) s[h] += __shfl_xor_sync(0xffffffffu, s[h], 2);
      const float sc = live ? s[h] * scale : -INFINITY;
      float mt = sc;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
      const float m_new = fmaxf(m[h], mt);  // finite: slot 0 holds a position
      const float corr = expf(m[h] - m_new);  // 0 on the warp's first tile (m = -inf)
      p[h] = expf(sc - m_new);                // 0 for a slot past the chunk's end
      l[h] = l[h] * corr + (part == 0 ? p[h] : 0.0f);  // one lane per position; summed at the end
#pragma unroll
      for (int i = 0; i < kDims; ++i) o[h][i] *= corr;
      m[h] = m_new;
    }
    // Every step of the V sum, without a break at the tile's end or the group's: rows past the
    // end were loaded as 0 and their slots' weights are 0 (at lpp = 4 rows 8-15 take lanes 0-28
    // again: weight x 0); a head past the group's end is never written. With a break per step
    // each shuffle waited on the one before (v25's first build: +2.3 us a 32-position chunk).
    if (wide_v) {
#pragma unroll
      for (int u = 0; u < kMaxTile / 2; ++u) {
#pragma unroll
        for (int h = 0; h < kHeads; ++h) {
          const float w = __shfl_sync(0xffffffffu, p[h], 4 * u);
          o[h][0] += w * Bf16Lo(vr[2 * u]);
          o[h][1] += w * Bf16Hi(vr[2 * u]);
          o[h][kDims - 2] += w * Bf16Lo(vr[2 * u + 1]);  // dims 2 and 3 (kDims is 4 here)
          o[h][kDims - 1] += w * Bf16Hi(vr[2 * u + 1]);
        }
      }
    } else {
#pragma unroll
      for (int u = 0; u < kMaxTile; ++u) {
#pragma unroll
        for (int h = 0; h < kHeads; ++h) {
          const float w = __shfl_sync(0xffffffffu, p[h], (u * lpp) & 31);
          o[h][0] += w * Bf16Lo(vr[u]);
          o[h][1] += w * Bf16Hi(vr[u]);
        }
      }
    }
  }
  const int stride = HD + 2;
#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    if (h >= heads) break;
    const float l_sum = WarpSum(l[h]);
    float* s = state + (warp * group + h0 + h) * stride;
    const int dv = wide_v ? 4 * lane : 2 * lane;
    if (dv < HD) {  // HD % 8 == 0: every one of the lane's dims
      s[dv] = o[h][0];
      s[dv + 1] = o[h][1];
      if (wide_v) {
        s[dv + 2] = o[h][kDims - 2];
        s[dv + 3] = o[h][kDims - 1];
      }
    }
    if (lane == 0) {
      s[HD] = m[h];
      s[HD + 1] = l_sum;
    }
  }
}

// kWide: the wide kernel (cuda/worker.h WorkerWide), the only one that runs head dims above
// kNarrowMaxHeadDim (64), head dims not a multiple of 8 and groups above kNarrowMaxGroup (4):
// their tiles in one pass (AttendChunkTiles<true>), their positions one by one, and the
// batches of positions. The narrow kernel compiles none of them (v53, v53b: less code beside
// the 1B's and SmolLM2's).
template <bool kWide = false>
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
  const float* inv_freq = static_cast<const float*>(c.Tensor(t.weight2));
  uint16_t* kc = static_cast<uint16_t*>(c.Buffer(t.aux_buf)) + static_cast<size_t>(t.layer) * 2 * p.max_context * KV;
  uint16_t* vc = kc + static_cast<size_t>(p.max_context) * KV;

  // The queries' RoPE and, in the chunk that owns position pos, the K/V append, as one index
  // space over the block: items [0, nq) rope a query pair, [nq, nq + half) a K pair, the next
  // HD copy a V value. Disjoint threads take the three (224 of 512 for the 1B), so that their
  // loads from the QKV output can leave together rather than loop after loop (v33; measured
  // in docs/PERFORMANCE.md, calls SC1-SC2: the ATTENTION waves barely moved).
  float* q = c.smem;  // (group, HD) roped queries
  const int nq = group * half;
  const int items = chunk == n_chunks - 1 ? nq + half + HD : nq;
  const float* k = qkv + Q + kv * HD;
  const float* v = qkv + Q + KV + kv * HD;
  uint16_t* krow = kc + static_cast<size_t>(c.pos) * KV + kv * HD;
  uint16_t* vrow = vc + static_cast<size_t>(c.pos) * KV + kv * HD;
  for (int i = threadIdx.x; i < items; i += kThreads) {
    if (i >= nq + half) {
      const int d = i - nq - half;
      vrow[d] = ToBf16(v[d]);
      continue;
    }
    const bool is_q = i < nq;
    const int h = is_q ? i / half : 0, d = is_q ? i - h * half : i - nq;
    const float* x = is_q ? qkv + (kv * group + h) * HD : k;
    const float a = x[d], b = x[d + half];
    float s, co;
    sincosf(static_cast<float>(c.pos) * inv_freq[d], &s, &co);
    const float r0 = a * co - b * s, r1 = b * co + a * s;
    if (is_q) {
      q[h * HD + d] = r0;
      q[h * HD + d + half] = r1;
    } else {
      krow[d] = ToBf16(r0);
      krow[d + half] = ToBf16(r1);
    }
  }
  __syncthreads();  // queries ready; this block's K/V row visible to its own warps
  PhaseMark(c, 0);

  float* state = c.smem + group * HD;
  // Long chunks in tiles of positions over lanes (v28): one memory round trip a tile, where
  // AttendChunk waits one per position or batch. Decided per step from the longest chunk's
  // length, min(span, ctx) (the last chunk's; the first may hold fewer positions), the same
  // for every chunk of the step, so that a step runs one of the two codes in all its
  // ATTENTION tasks: the tiles' extra executed code slows every other wave through
  // instruction fetch (call K), and both codes in one step slowed the 1B by 10% (call P).
  // Uniform over the grid. span alone chose the tiles for a context shorter than min_chunk
  // (one chunk of ctx positions), 2.7-5.7% slower at context 1 with min_chunk 96-128 (call AC2).
  const bool tiles = (HD & 7) == 0 && min(span, ctx) >= p.attention_tile_min;
  // Batches only where a warp has more than one batch of positions: in a short chunk a
  // batch's slots past the end cost their reductions and win nothing (v18). Only in the wide
  // kernel (v53b): in the narrow one a chunk of more than 64 positions takes the tiles by
  // default (AttentionTileMin 65; its head dims are multiples of 8, WorkerWide), so the batches
  // would run only under an explicit attention_tile_min above 65, which there attends long
  // chunks position by position, unbatched.
  const bool batched = kWide && end - begin > 4 * kWarps;  // uniform over the block
  if (tiles) {
    // Query heads 4 at a time, every head dim in each pass (one pass for Llama 3.2 1B,
    // SmolLM2, Llama 3.2 3B and Llama 3.1 8B), each pass reading the chunk's K rows.
    for (int h0 = 0; h0 < group; h0 += 4) AttendChunkTiles<kWide>(q, kc, vc, KV, kv, HD, group, h0, begin, end, state);
  } else if (HD <= kNarrowMaxHeadDim) {
    if (group <= kNarrowMaxGroup) {
      if (batched) AttendChunk<4, 2, 4>(q, kc, vc, KV, kv, HD, group, begin, end, state);
      else AttendChunk<4, 2, 1>(q, kc, vc, KV, kv, HD, group, begin, end, state);
    } else if constexpr (kWide) {  // groups above kNarrowMaxGroup: the wide kernel's alone
      if (batched) AttendChunk<kGpuMaxGroup, 2, 4>(q, kc, vc, KV, kv, HD, group, begin, end, state);
      else AttendChunk<kGpuMaxGroup, 2, 1>(q, kc, vc, KV, kv, HD, group, begin, end, state);
    }
  } else if constexpr (kWide) {  // HD > 64: the wide kernel's alone (the host sends such models there)
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
