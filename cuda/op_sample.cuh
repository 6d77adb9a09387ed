// Sampling inside the worker: one block chooses the next token from the full logits row by
// the rule of cuda/sample.h (temperature, top-k, top-p, seeded counter-based draw), the same
// rule the CPU sampler applies serially, so equal logits give equal ids.
//
// The kept set is {i : key(i) >= threshold}. The threshold comes from a radix select over
// the 64-bit keys, 8 bits per pass from the top: each pass histograms (count and fixed-point
// mass per bin) the keys that share the prefix chosen so far, then walks the bins from the
// largest down to the one that holds the k-th key (top-k) or reaches the top-p mass; it
// stops as soon as that whole bin is kept. Masses are integers, so every sum is exact and the
// result does not depend on the order of atomics. The draw then scans ids in order, one
// contiguous chunk per thread, with a block prefix sum of the chunk masses.
// Cost: ~2-10 passes over the V logits by one block; run only when temperature > 0.
#pragma once
#include "cuda/common.cuh"
#include "cuda/sample.h"

namespace tileinfer {
namespace device {

struct SampleShared {
  uint32_t count[256];
  unsigned long long mass[256];
  unsigned long long warp_total[kWarps];
  unsigned long long prefix, draw;
  int done, token;
};

struct SampleInput {
  const float* logits;  // (V,) FP32, written by the LM_HEAD wave
  int vocab;
  float max_logit;      // the largest logit (the greedy token's)
  float temperature;
  __device__ uint64_t Mass(float logit) const { return SampleMass(logit, max_logit, temperature); }
};

// Calls f(i, logit, valid) for i = base + u * kThreads + threadIdx.x over the whole row, in
// batches whose kSampleBatch loads are all issued before the first is used (one block reads
// the whole row several times: without this each pass waits on one L2 latency per element).
// Every thread of the block makes the same calls (valid false past the row), so f may use
// warp-wide intrinsics.
constexpr int kSampleBatch = 8;
template <typename F>
__device__ __forceinline__ void ForEachLogit(const SampleInput& in, F&& f) {
  for (int base = 0; base < in.vocab; base += kThreads * kSampleBatch) {
    float logit[kSampleBatch];
#pragma unroll
    for (int u = 0; u < kSampleBatch; ++u) {
      const int i = base + u * kThreads + threadIdx.x;
      logit[u] = i < in.vocab ? in.logits[i] : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kSampleBatch; ++u) {
      const int i = base + u * kThreads + threadIdx.x;
      f(i, logit[u], i < in.vocab);
    }
  }
}

// Sum of v over the block, every thread gets it (exact: integers).
__device__ __forceinline__ unsigned long long BlockSumU64(unsigned long long v, SampleShared& s) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (lane == 0) s.warp_total[warp] = v;
  __syncthreads();
  unsigned long long total = 0;
  for (int w = 0; w < kWarps; ++w) total += s.warp_total[w];
  return total;
}

// The threshold T of the kept set {key >= T} among the keys >= lo: by_mass false, the `need`
// largest keys (1 <= need <= their count); by_mass true, the fewest largest keys whose mass
// reaches `need` (1 <= need <= their mass).
__device__ __noinline__ uint64_t RadixThreshold(const SampleInput& in, uint64_t lo, uint64_t need, bool by_mass, SampleShared& s) {
  const int lane = threadIdx.x & 31;
  uint64_t prefix = 0;
  uint64_t remaining = need;  // thread 0's: what the bins at and below the current one must give
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += kThreads) {
      s.count[b] = 0;
      s.mass[b] = 0;
    }
    __syncthreads();
    const uint64_t high = shift == 56 ? 0 : ~uint64_t{0} << (shift + 8);  // bits chosen so far
    ForEachLogit(in, [&](int i, float logit, bool valid) {
      int bin = 256;  // not counted
      unsigned long long m = 0;
      const uint64_t k = SampleKey(logit, i);
      if (valid && k >= lo && (k & high) == prefix) {
        bin = static_cast<int>((k >> shift) & 255);
        if (by_mass) m = in.Mass(logit);
      }
      // One atomic per distinct bin per warp (keys crowd into few bins on the first pass).
      const unsigned peers = __match_any_sync(0xffffffffu, bin);
      unsigned long long group_mass = 0;
      if (by_mass && __any_sync(0xffffffffu, m != 0)) {  // past top-k few keys are in play
        for (int src = 0; src < 32; ++src) {
          const unsigned long long v = __shfl_sync(0xffffffffu, m, src);
          if ((peers >> src) & 1) group_mass += v;
        }
      }
      if (bin < 256 && lane == __ffs(peers) - 1) {
        atomicAdd(&s.count[bin], static_cast<uint32_t>(__popc(peers)));
        if (by_mass) atomicAdd(&s.mass[bin], group_mass);
      }
    });
    __syncthreads();
    if (threadIdx.x == 0) {
      int b = 255;
      for (; b > 0; --b) {  // bins above b are kept whole
        const uint64_t have = by_mass ? s.mass[b] : s.count[b];
        if (have >= remaining) break;
        remaining -= have;
      }
      s.prefix = prefix | (static_cast<uint64_t>(b) << shift);
      s.done = shift == 0 || (by_mass ? (s.mass[b] == remaining || s.count[b] == 1) : s.count[b] == remaining);
    }
    __syncthreads();
    prefix = s.prefix;
    const bool done = s.done;
    __syncthreads();  // s.prefix and s.done are rewritten by the next pass
    if (done) break;  // the whole bin is kept: every key >= prefix (lower bits 0) and >= lo
  }
  return prefix > lo ? prefix : lo;
}

// The sampled id for position counter `counter`. Every thread of the block must call it;
// every thread gets the id.
__device__ __noinline__ int SampleBlock(const SampleInput& in, int top_k, float top_p, uint64_t seed, uint64_t counter,
                           SampleShared& s) {
  uint64_t threshold = 0;
  if (top_k > 0 && top_k < in.vocab) threshold = RadixThreshold(in, 0, static_cast<uint64_t>(top_k), false, s);
  if (top_p < 1.0f) {
    unsigned long long kept = 0;
    ForEachLogit(in, [&](int i, float logit, bool valid) {
      if (valid && SampleKey(logit, i) >= threshold) kept += in.Mass(logit);
    });
    kept = BlockSumU64(kept, s);
    threshold = RadixThreshold(in, threshold, TopPTarget(kept, top_p), true, s);
  }
  // The draw: ids in order, thread t owns the chunk [t * chunk, (t + 1) * chunk).
  const int chunk = (in.vocab + kThreads - 1) / kThreads;
  const int begin = min(in.vocab, static_cast<int>(threadIdx.x) * chunk), end = min(in.vocab, begin + chunk);
  unsigned long long mine = 0;
  for (int i0 = begin; i0 < end; i0 += kSampleBatch) {  // batched loads, as in ForEachLogit
    float logit[kSampleBatch];
#pragma unroll
    for (int u = 0; u < kSampleBatch; ++u) logit[u] = i0 + u < end ? in.logits[i0 + u] : 0.0f;
#pragma unroll
    for (int u = 0; u < kSampleBatch; ++u) {
      if (i0 + u < end && SampleKey(logit[u], i0 + u) >= threshold) mine += in.Mass(logit[u]);
    }
  }
  // Exclusive prefix of the chunk masses: within each warp by shuffles, then across warps.
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned long long inclusive = mine;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned long long v = __shfl_up_sync(0xffffffffu, inclusive, o);
    if (lane >= o) inclusive += v;
  }
  if (lane == 31) s.warp_total[warp] = inclusive;
  __syncthreads();
  unsigned long long before = inclusive - mine, total = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) before += s.warp_total[w];
    total += s.warp_total[w];
  }
  if (threadIdx.x == 0) s.draw = DrawBelow(seed, counter, total);  // total >= 2^40
  __syncthreads();
  const unsigned long long u = s.draw;
  if (before <= u && u < before + mine) {  // exactly one thread owns the draw
    unsigned long long cumulative = before;
    for (int i = begin; i < end; ++i) {
      const float logit = in.logits[i];
      if (SampleKey(logit, i) < threshold) continue;
      cumulative += in.Mass(logit);
      if (u < cumulative) {
        s.token = i;
        break;
      }
    }
  }
  __syncthreads();
  const int token = s.token;
  __syncthreads();
  return token;
}

}  // namespace device
}  // namespace tileinfer
