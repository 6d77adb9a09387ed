// The sampling rule, shared by the CPU executor (host/sampler.cc, serial) and the CUDA worker
// (cuda/op_sample.cuh, one block in parallel): both build on these definitions, so that for
// the same logits, options and draw counter they choose the same token, except when the
// device's and the host's double-precision exp() round one mass differently (each is within
// 1 ulp; a mass then differs by one unit of 2^-40 and a draw can change with probability of
// the order of 2^-40). Runs on one executor are bit-identical.
//
// Rule (order as Hugging Face's and llama.cpp's processors: temperature, top-k, top-p):
//   key(i)   = (logit_i as an order-preserving 32-bit integer) << 32 | (0xFFFFFFFF - i):
//              larger logit first, the lower id first among equal logits; keys are unique.
//   mass(i)  = round(exp((logit_i - max_logit) / T) * 2^40), an integer (fixed point), so that
//              sums are exact and independent of the summation order (deterministic in
//              parallel). The largest logit has mass 2^40; ids below exp(-40 ln 2)
//              relative probability (< 1e-12 each) get mass 0 and are never drawn.
//   top-k:   keep the top_k largest keys (all when top_k is 0 or >= V).
//   top-p:   of those, keep the smallest set of largest keys whose mass reaches
//            TopPTarget(mass of the top-k set, top_p) (all when top_p is 1).
//   So the kept set is {i : key(i) >= threshold}. Draw u = DrawBelow(seed, counter, M) with
//   M the kept mass, uniform in [0, M); the token is the lowest id i in the kept set whose
//   cumulative mass over kept ids 0..i exceeds u. Over the draws this is softmax(logits / T)
//   restricted to the kept set (Holtzman et al. 2020 for top-p; Fan et al. 2018 for top-k).
// A plain C++ header that nvcc also compiles for the device.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define TILEINFER_SAMPLE_FN __host__ __device__ __forceinline__
#else
#define TILEINFER_SAMPLE_FN inline
#endif

namespace tileinfer {

constexpr double kSampleMassScale = 1099511627776.0;  // 2^40: the mass of the largest logit

TILEINFER_SAMPLE_FN uint64_t SampleKey(float logit, int id) {
  if (logit == 0.0f) logit = 0.0f;  // -0 and +0 are equal logits: one key order (by id)
#ifdef __CUDA_ARCH__
  const uint32_t bits = __float_as_uint(logit);
#else
  uint32_t bits;
  std::memcpy(&bits, &logit, 4);
#endif
  const uint32_t ordered = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  return (static_cast<uint64_t>(ordered) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(id));
}

TILEINFER_SAMPLE_FN uint64_t SampleMass(float logit, float max_logit, float temperature) {
  const double x = (static_cast<double>(logit) - static_cast<double>(max_logit)) / static_cast<double>(temperature);
  return static_cast<uint64_t>(llrint(exp(x) * kSampleMassScale));
}

// The mass the top-p set must reach: ceil(top_p * kept_mass), at least 1, at most kept_mass.
TILEINFER_SAMPLE_FN uint64_t TopPTarget(uint64_t kept_mass, float top_p) {
  if (top_p >= 1.0f) return kept_mass;
  const double t = ceil(static_cast<double>(top_p) * static_cast<double>(kept_mass));
  if (t < 1.0) return 1;
  const uint64_t target = static_cast<uint64_t>(t);
  return target > kept_mass ? kept_mass : target;
}

// 64 random bits for draw `counter` of stream `seed`: SplitMix64 (Steele, Lea, Flood 2014)
// of the pair, a stateless counter-based stream.
TILEINFER_SAMPLE_FN uint64_t DrawBits(uint64_t seed, uint64_t counter) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (counter + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A uniform integer in [0, m) for m >= 1: the high 64 bits of DrawBits * m (exact).
TILEINFER_SAMPLE_FN uint64_t DrawBelow(uint64_t seed, uint64_t counter, uint64_t m) {
  const uint64_t z = DrawBits(seed, counter);
#ifdef __CUDA_ARCH__
  return __umul64hi(z, m);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(z) * m) >> 64);
#endif
}

}  // namespace tileinfer
