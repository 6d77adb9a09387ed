// Device helpers shared by the opcode files: BF16 loads, deterministic reductions, and
// the per-block view of the worker's parameters. Reductions use fixed trees (warp shuffles,
// then warps in index order), so a result depends only on the block size, never on timing.
#pragma once

#include <cuda_bf16.h>
#include <cstdint>

#include "cuda/plan_format.h"
#include "cuda/select.h"
#include "cuda/worker.h"

namespace tileinfer {
namespace device {

constexpr int kThreads = kWorkerThreads;
constexpr int kWarps = kWorkerThreads / 32;
constexpr int kMaxDimsPerLane = kGpuMaxHeadDim / 32;  // head dims a lane holds in attention
static_assert(kGpuMaxHeadDim % 32 == 0, "attention spreads head dims over a warp's lanes");

__device__ __forceinline__ float Bf16(uint16_t h) { return __uint_as_float(uint32_t(h) << 16); }
__device__ __forceinline__ float Bf16Lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float Bf16Hi(uint32_t w) { return __uint_as_float(w & 0xFFFF0000u); }
__device__ __forceinline__ uint16_t ToBf16(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// A release add of 1 to a counter and an acquire load of it, at GPU scope (PTX memory
// consistency model). Host builds of the op files (the CPU emulator, one block of fibers that
// switch only at block and warp barriers) use plain accesses, which its checker sees.
__device__ __forceinline__ void AddRelease(uint32_t* counter) {
#ifdef __CUDA_ARCH__
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(counter) : "memory");
#else
  *counter += 1;
#endif
}
__device__ __forceinline__ uint32_t LoadAcquire(const uint32_t* counter) {
#ifdef __CUDA_ARCH__
  uint32_t seen;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
  return seen;
#else
  return *counter;
#endif
}

// One thread's acquire polls of `word` until it reaches `target`. sleep_ns > 0: __nanosleep(sleep_ns)
// after each poll that did not (floor --mode=barrier's variants; on the H200 every sleep made
// the barrier slower, docs/PERFORMANCE.md call FB2).
__device__ __forceinline__ void PollAtLeast(const uint32_t* word, uint32_t target, uint32_t sleep_ns = 0) {
  while (LoadAcquire(word) < target) {
#ifdef __CUDA_ARCH__
    if (sleep_ns != 0) __nanosleep(sleep_ns);
#endif
  }
}

// The reader half of that pattern for a whole block: thread 0 polls `counter` with acquire
// loads until it reaches `target` (PollAtLeast); the __syncthreads then orders every thread's
// later reads after the writes released before the adds it observed.
__device__ __forceinline__ void WaitAtLeast(const uint32_t* counter, uint32_t target, uint32_t sleep_ns = 0) {
  if (threadIdx.x == 0) PollAtLeast(counter, target, sleep_ns);
  __syncthreads();
}

// A grid barrier on one monotonic counter in global memory (all blocks resident, e.g. a
// cooperative launch): every block calls it with target = (barriers it has passed + 1) *
// gridDim.x and the counter starting at 0. The __syncthreads orders the block's earlier
// writes before thread 0's release add (release is cumulative over what thread 0 has
// observed); thread 0's acquire load that sees the target orders every block's pre-barrier
// writes before the second __syncthreads and so before the block's later reads (PTX ISA,
// memory consistency model: release and acquire patterns). kAcquirePoll false: the polls
// are relaxed loads and one fence.acq_rel follows the last (an acquire pattern too), so
// that each poll is a plain L2 read. sleep_ns: WaitAtLeast's (acquire polls only).
template <bool kAcquirePoll = true>
__device__ __forceinline__ void CounterBarrier(uint32_t* counter, uint32_t target, uint32_t sleep_ns = 0) {
  __syncthreads();
  if (threadIdx.x == 0) AddRelease(counter);
  if (kAcquirePoll) return WaitAtLeast(counter, target, sleep_ns);
  if (threadIdx.x == 0) {
    uint32_t seen;
    do {
      asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
    } while (seen < target);
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
  }
  __syncthreads();
}

// Sum over the block; every thread gets the total. `scratch`: kWarps floats of shared memory.
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = WarpSum(v);
  __syncthreads();  // scratch may still be read by a previous BlockSum
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < kWarps; ++w) total += scratch[w];
  return total;
}

// One warp: sum_k w[k] * x[k] for a BF16 row w (global, read-only) and x in shared memory.
// Every lane gets the result. 16-byte loads when the row allows; each lane issues
// kDotUnroll of them before using any, so that enough bytes are in flight to cover DRAM
// latency (one load per lane per iteration reached only ~1.6 TB/s on the H200). 4: 32 KB a
// SM in flight for one row a warp, 64 KB for row pairs (WarpDot2Bf16), which saturates HBM;
// 8 (128 KB for pairs) made every wave slower, the streaming ones too, and 2 slower still
// (H200: -1.8 to -2.7% a 1B token for 4 against 8; docs/PERFORMANCE.md, v45).
constexpr int kDotUnroll = 4;

__device__ __forceinline__ float Dot8(const uint4 v, const float* xs) {
  return Bf16Lo(v.x) * xs[0] + Bf16Hi(v.x) * xs[1] + Bf16Lo(v.y) * xs[2] + Bf16Hi(v.y) * xs[3] +
         Bf16Lo(v.z) * xs[4] + Bf16Hi(v.z) * xs[5] + Bf16Lo(v.w) * xs[6] + Bf16Hi(v.w) * xs[7];
}

// A 16-byte piece of a weight row at `p` (global memory, 16-byte aligned, not written during
// the launch: the read-only path). Weights are read once a token, so the load marks its L2
// line evict-first (PTX ISA "createpolicy", "ld" with .L2::cache_hint; sm_80+): the weights
// (2.5 GB a token on the 1B) stream through L2 without pushing out what is read again soon,
// the worker's code (fetched by every task), the activations and the K/V cache. H200: -2.7 to
// -4.3% a token (docs/PERFORMANCE.md, v41). Host builds (the CPU emulator): plain __ldg.
__device__ __forceinline__ uint4 LoadWeight8(const uint4* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  uint4 v;
  asm("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p), "l"(policy));
  return v;
#else
  return __ldg(p);
#endif
}

// The fallbacks below (a row or size that 16-byte loads cannot take: tiny test models) run in
// no model we measure. The narrow kernel (kWide false: worker.h WorkerWide) calls each out of
// line (the `__noinline__` ...Cold forms), so that its GEMVs carry no inlined copies of them:
// its sm_90 code shrank by a fifth and the 1B and SmolLM2 gained 0.2-1.4% a token
// (docs/PERFORMANCE.md, v54 and v54n: calls V53B, V54N). The wide kernel keeps them inline: out
// of line there too, the 3B lost 0.4-0.6% at contexts 1 and 1024 (call V54W).

// A lane's part of row . x before WarpSum, element by element.
__device__ __forceinline__ float WarpDotBf16Scalar(const uint16_t* w, const float* x, int k) {
  float acc = 0;
  for (int i = threadIdx.x & 31; i < k; i += 32) acc += Bf16(__ldg(w + i)) * x[i];
  return acc;
}
__device__ __noinline__ float WarpDotBf16ScalarCold(const uint16_t* w, const float* x, int k) {
  return WarpDotBf16Scalar(w, x, k);
}

template <bool kWide>
__device__ __forceinline__ float WarpDotBf16(const uint16_t* w, const float* x, int k) {
  const int lane = threadIdx.x & 31;
  float acc = 0;
  if ((k & 7) == 0 && (reinterpret_cast<uintptr_t>(w) & 15) == 0) {
    const uint4* w8 = reinterpret_cast<const uint4*>(w);
    const int n = k >> 3;
    for (int base = 0; base < n; base += 32 * kDotUnroll) {
      uint4 v[kDotUnroll];
#pragma unroll
      for (int u = 0; u < kDotUnroll; ++u) {
        const int i = base + lane + 32 * u;
        v[u] = i < n ? LoadWeight8(w8 + i) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kDotUnroll; ++u) {
        const int i = base + lane + 32 * u;
        if (i < n) acc += Dot8(v[u], x + i * 8);
      }
    }
  } else {
    if constexpr (kWide) {
      acc = WarpDotBf16Scalar(w, x, k);
    } else {
      acc = WarpDotBf16ScalarCold(w, x, k);
    }
  }
  return WarpSum(acc);
}

// WarpDotBf16 out of line: the narrow kernel's WarpDotRowsBf16 fallback, one call a row.
__device__ __noinline__ float WarpDotBf16Cold(const uint16_t* w, const float* x, int k) {
  return WarpDotBf16<false>(w, x, k);
}

// kN rows against the same x at once: every load of all the rows is issued before any is
// used (kN times the bytes in flight per warp), and each row is summed in exactly
// WarpDotBf16's order (bit-identical). Rows in global memory; when k or an address does not
// allow 16-byte loads, one WarpDotBf16 call a row. Every lane gets y[j] = row j . x.
template <int kN, bool kWide>
__device__ __forceinline__ void WarpDotRowsBf16(const uint16_t* const (&w)[kN], const float* x, int k, float (&y)[kN]) {
  uintptr_t addresses = 0;
#pragma unroll
  for (int j = 0; j < kN; ++j) addresses |= reinterpret_cast<uintptr_t>(w[j]);
  if ((k & 7) != 0 || (addresses & 15) != 0) {
#pragma unroll
    for (int j = 0; j < kN; ++j) {
      if constexpr (kWide) {
        y[j] = WarpDotBf16<true>(w[j], x, k);
      } else {
        y[j] = WarpDotBf16Cold(w[j], x, k);
      }
    }
    return;
  }
  const int lane = threadIdx.x & 31;
  const int n = k >> 3;
  float acc[kN];
#pragma unroll
  for (int j = 0; j < kN; ++j) acc[j] = 0;
  for (int base = 0; base < n; base += 32 * kDotUnroll) {
    uint4 v[kN][kDotUnroll];
#pragma unroll
    for (int u = 0; u < kDotUnroll; ++u) {
      const int i = base + lane + 32 * u;
#pragma unroll
      for (int j = 0; j < kN; ++j) {
        v[j][u] = i < n ? LoadWeight8(reinterpret_cast<const uint4*>(w[j]) + i) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int j = 0; j < kN; ++j) {
#pragma unroll
      for (int u = 0; u < kDotUnroll; ++u) {
        const int i = base + lane + 32 * u;
        if (i < n) acc[j] += Dot8(v[j][u], x + i * 8);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kN; ++j) y[j] = WarpSum(acc[j]);
}

// Two rows at once (WarpDotRowsBf16): every lane gets (row a . x, row b . x).
template <bool kWide>
__device__ __forceinline__ float2 WarpDot2Bf16(const uint16_t* wa, const uint16_t* wb, const float* x, int k) {
  const uint16_t* const w[2] = {wa, wb};
  float y[2];
  WarpDotRowsBf16<2, kWide>(w, x, k, y);
  return make_float2(y[0], y[1]);
}

// The residual stream's FIXED64 (format_spec): fix(v) = v * 2^32 rounded to the nearest
// integer, ties to even, for |v| <= kFixedMaxMagnitude; any other v (too large, inf, NaN)
// counts in *invalid (WorkerParams::residual_invalid) and gives 0. real(q) = q rounded to
// the nearest float, * 2^-32. The CPU executor computes both alike (host/cpu_executor.cc).
static_assert(format::kFixedFractionBits == 32, "Fix and Real scale by 2^32");
__device__ __forceinline__ long long Fix(float v, unsigned long long* invalid) {
  if (fabsf(v) <= format::kFixedMaxMagnitude) return __float2ll_rn(v * 4294967296.0f);  // exact product
  atomicAdd(invalid, 1ull);
  return 0;
}
__device__ __forceinline__ float Real(long long q) { return __ll2float_rn(q) * (1.0f / 4294967296.0f); }
// *p += q as one relaxed, device-scope integer add whose old value nobody waits for
// (red.add.u64): the adds into a FIXED64 buffer land in any order with the same sum. Host
// builds (the CPU emulator, whose fibers switch only at barriers) use a plain add.
__device__ __forceinline__ void RedAddU64(unsigned long long* p, long long q) {
#ifdef __CUDA_ARCH__
  asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;\n" ::"l"(p), "l"(q) : "memory");
#else
  *p += static_cast<unsigned long long>(q);
#endif
}

// Four consecutive elements of an activation from i (16-byte aligned) as floats: F32 as they
// are, the FIXED64 residual through Real; and one element.
__device__ __forceinline__ float4 Load4(const float* x, int i) { return *reinterpret_cast<const float4*>(x + i); }
__device__ __forceinline__ float4 Load4(const long long* x, int i) {
  const longlong2 a = *reinterpret_cast<const longlong2*>(x + i), b = *reinterpret_cast<const longlong2*>(x + i + 2);
  return make_float4(Real(a.x), Real(a.y), Real(b.x), Real(b.y));
}
__device__ __forceinline__ float Load1(const float* x, int i) { return x[i]; }
__device__ __forceinline__ float Load1(const long long* x, int i) { return Real(x[i]); }

// Four consecutive elements of an activation from i (16-byte aligned) through the global state
// space at L2 (ld.global.cg): unlike a generic load, it cannot alias shared memory, so a loop
// that stores into shared memory between its loads may still issue them together.
__device__ __forceinline__ float4 Load4Global(const float* x, int i) {
  return __ldcg(reinterpret_cast<const float4*>(x + i));
}
__device__ __forceinline__ float4 Load4Global(const long long* x, int i) {
  const longlong2 a = __ldcg(reinterpret_cast<const longlong2*>(x + i));
  const longlong2 b = __ldcg(reinterpret_cast<const longlong2*>(x + i + 2));
  return make_float4(Real(a.x), Real(a.y), Real(b.x), Real(b.y));
}

// xn = x * g / sqrt(mean(x^2) + eps) into shared memory (RMSNorm). x is an activation
// written by other blocks in earlier waves (F32, or the FIXED64 residual): plain or L2
// loads, never the read-only path. Three forms, by n; the first two need n % 4 == 0, x and
// xn 16-byte and g 8-byte aligned:
// - n <= 4 * kNormVec * kThreads (the 1B, SmolLM2): every thread issues all its loads of x
//   and g at once (4 elements and 4 BF16) and keeps them in registers across the block
//   reduction: one memory round trip.
// - larger n (the Llama 3.2 3B's 3,072, 3.1 8B's 4,096), in the kWide instantiation only
//   (worker.h WorkerWide: the host launches that kernel for hidden sizes above 2,048, so
//   that the other kernel's code stays as it was; docs/PERFORMANCE.md, v51t): each thread's
//   groups of 4, two at a time, x through L2 loads (Load4Global) into xn, then after the
//   reduction g's groups: two round trips, where the element-by-element loop took 2.3-3.1 us
//   a task against the first form's 0.8 (docs/PERFORMANCE.md, call PT3B, v51). Neither kNormVec 2 (registers) nor g
//   staged in shared memory during the first pass fit sm_90's 128 registers without spills.
// - anything else (e.g. tiny test models): one element a thread at a time.
// The sum of squares is per thread in its elements' order, then BlockSum's fixed tree.
constexpr int kNormVec = 1;

// RmsNormToShared's last form, and out of line (see WarpDotBf16Scalar).
template <typename T>
__device__ __forceinline__ void RmsNormToSharedScalar(const T* x, const uint16_t* g, int n, float eps, float* xn,
                                                      float* scratch) {
  float ss = 0;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const float v = Load1(x, i);
    xn[i] = v;
    ss += v * v;
  }
  const float total = BlockSum(ss, scratch);
  const float inv = 1.0f / sqrtf(total / static_cast<float>(n) + eps);
  for (int i = threadIdx.x; i < n; i += kThreads) xn[i] = xn[i] * inv * Bf16(__ldg(g + i));
}
template <typename T>
__device__ __noinline__ void RmsNormToSharedScalarCold(const T* x, const uint16_t* g, int n, float eps, float* xn,
                                                       float* scratch) {
  RmsNormToSharedScalar(x, g, n, eps, xn, scratch);
}

template <bool kWide, typename T>
__device__ __forceinline__ void RmsNormToShared(const T* x, const uint16_t* g, int n, float eps,
                                                float* xn, float* scratch) {
  const bool vec = (n & 3) == 0 && n <= 4 * kNormVec * kThreads &&
                   ((reinterpret_cast<uintptr_t>(x) & 15) | (reinterpret_cast<uintptr_t>(xn) & 15) |
                    (reinterpret_cast<uintptr_t>(g) & 7)) == 0;
  if (vec) {
    float4 v[kNormVec];
    uint2 gw[kNormVec];
#pragma unroll
    for (int u = 0; u < kNormVec; ++u) {
      const int i = 4 * (threadIdx.x + u * kThreads);
      v[u] = i < n ? Load4(x, i) : make_float4(0, 0, 0, 0);
      gw[u] = i < n ? __ldg(reinterpret_cast<const uint2*>(g + i)) : make_uint2(0, 0);
    }
    float ss = 0;
#pragma unroll
    for (int u = 0; u < kNormVec; ++u) ss += v[u].x * v[u].x + v[u].y * v[u].y + v[u].z * v[u].z + v[u].w * v[u].w;
    const float inv = 1.0f / sqrtf(BlockSum(ss, scratch) / static_cast<float>(n) + eps);
#pragma unroll
    for (int u = 0; u < kNormVec; ++u) {
      const int i = 4 * (threadIdx.x + u * kThreads);
      if (i < n) {
        *reinterpret_cast<float4*>(xn + i) =
            make_float4(v[u].x * inv * Bf16Lo(gw[u].x), v[u].y * inv * Bf16Hi(gw[u].x),
                        v[u].z * inv * Bf16Lo(gw[u].y), v[u].w * inv * Bf16Hi(gw[u].y));
      }
    }
  } else if (kWide && (n & 3) == 0 &&
             ((reinterpret_cast<uintptr_t>(x) & 15) | (reinterpret_cast<uintptr_t>(xn) & 15) |
              (reinterpret_cast<uintptr_t>(g) & 7)) == 0) {
    float ss = 0;
#pragma unroll 2
    for (int i4 = threadIdx.x; i4 < n / 4; i4 += kThreads) {
      const float4 v = Load4Global(x, 4 * i4);
      *reinterpret_cast<float4*>(xn + 4 * i4) = v;
      ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    const float inv = 1.0f / sqrtf(BlockSum(ss, scratch) / static_cast<float>(n) + eps);
#pragma unroll 2
    for (int i4 = threadIdx.x; i4 < n / 4; i4 += kThreads) {
      const float4 v = *reinterpret_cast<const float4*>(xn + 4 * i4);
      const uint2 gw = __ldg(reinterpret_cast<const uint2*>(g) + i4);
      *reinterpret_cast<float4*>(xn + 4 * i4) =
          make_float4(v.x * inv * Bf16Lo(gw.x), v.y * inv * Bf16Hi(gw.x), v.z * inv * Bf16Lo(gw.y), v.w * inv * Bf16Hi(gw.y));
    }
  } else if constexpr (kWide) {
    RmsNormToSharedScalar(x, g, n, eps, xn, scratch);
  } else {
    RmsNormToSharedScalarCold(x, g, n, eps, xn, scratch);
  }
  __syncthreads();
}

// The worker's copies of the operand tables in dynamic shared memory (`smem` its base): right
// after the work area, n_tensors tensor addresses then n_buffers buffer addresses
// (WorkerParams::tables_bytes). The kernel's prologue fills them; StepContext reads them.
__device__ __forceinline__ const void** OperandTables(const WorkerParams& p, float* smem) {
  return reinterpret_cast<const void**>(reinterpret_cast<uint8_t*>(smem) + p.work_bytes);
}

// What every opcode needs besides its task record.
struct StepContext {
  const WorkerParams& p;
  int token;   // input token of this step
  int pos;     // its position
  float* smem; // dynamic shared memory: the ops' work area [0, p.work_bytes), then the operand tables
  float* scratch;  // kWarps floats of static shared memory
#ifdef TILEINFER_PHASE_TRACE
  unsigned long long* phases;  // this task's kMaxPhases marks in the traced step (first thread), else nullptr
#endif
  // Operand addresses by id, from the worker's copies of the tables in shared memory
  // (OperandTables). Computed from the parameters at each use, so that no register holds them
  // across tasks.
  __device__ const void* Tensor(uint32_t id) const { return OperandTables(p, smem)[id]; }
  __device__ void* Buffer(uint32_t id) const { return const_cast<void*>(OperandTables(p, smem)[p.n_tensors + id]); }
  __device__ const uint16_t* Bf16Tensor(uint32_t id) const { return static_cast<const uint16_t*>(Tensor(id)); }
  __device__ float* F32(uint32_t id) const { return static_cast<float*>(Buffer(id)); }
  __device__ long long* Fixed(uint32_t id) const { return static_cast<long long*>(Buffer(id)); }
};

// Phase boundary k (< kMaxPhases) inside a task, for the phase trace (WorkerParams::trace_phases;
// only in a build with -DTILEINFER_PHASE_TRACE, otherwise nothing at all): the block's first
// thread stores clock64() in the traced step. Every mark sits just after a __syncthreads, so
// the first thread's clock there is when the whole block had finished the phase before it
// (plus that thread's exit from the barrier); a mark adds no synchronisation of its own, and
// the clock read is not ordered against the next phase's loads, which may issue before it.
// The marks, by opcode (phase i runs from mark i - 1, or the task's begin, to mark i, or
// the task's end; names as in py/tools/trace_report.py PHASES):
//   ATTENTION     0: roped queries and the K/V append done   1: AttendChunk's states in shared memory
//   ATTN_OUT      0: the chunks merged
//   RMSNORM_GEMV  0: the norm        LM_HEAD 0: the norm
//   FFN           0: the norm        1: gate and up (h) done
__device__ __forceinline__ void PhaseMark(const StepContext& c, int k) {
#ifdef TILEINFER_PHASE_TRACE
  if (c.phases != nullptr) c.phases[k] = clock64();
#else
  (void)c;
  (void)k;
#endif
}

// The GEMV row loop of RMSNORM_GEMV, ATTN_OUT and LM_HEAD: one warp per output row r in
// [row_begin, row_end) of W (rows of k BF16 values), y = W[r] . x; then out(r, y) in every
// lane of the warp (lane 0 stores), rows in ascending order within a warp. A warp with two
// rows left (r and r + kWarps) loads them together (WarpDot2Bf16). kTriples: a warp with an
// odd number of rows, three or more, loads its first three together (WarpDotRowsBf16<3>), so
// that it takes as many dependent rounds of loads as a warp with one row fewer (e.g. the
// Llama 3.2 3B's QKV: 40 rows a task, 3 on warps 0-7 and 2 on the others; docs/PERFORMANCE.md,
// "v49"). Every row's sum is the same in all three forms. kWide: the kernel's instantiation
// (the narrow one calls the dot products' fallbacks out of line: WarpDotBf16Scalar).
template <bool kWide, bool kTriples = false, typename Out>
__device__ __forceinline__ void WarpRowsGemv(const format::TaskRecord& t, const StepContext& c,
                                             const uint16_t* w, const float* x, int k, Out&& out) {
  const int warp = threadIdx.x >> 5;
  uint32_t r = t.row_begin + warp;
  if (kTriples && r + 2 * kWarps < t.row_end && ((t.row_end - r + kWarps - 1) / kWarps) % 2 == 1) {
    const uint16_t* const rows[3] = {w + static_cast<size_t>(r) * k, w + static_cast<size_t>(r + kWarps) * k,
                                     w + static_cast<size_t>(r + 2 * kWarps) * k};
    float y[3];
    WarpDotRowsBf16<3, kWide>(rows, x, k, y);
    out(r, y[0]);
    out(r + kWarps, y[1]);
    out(r + 2 * kWarps, y[2]);
    r += 3 * kWarps;
  }
  for (; r < t.row_end; r += kWarps) {
    const uint16_t* row = w + static_cast<size_t>(r) * k;
    if (r + kWarps < t.row_end) {
      const float2 y = WarpDot2Bf16<kWide>(row, row + static_cast<size_t>(kWarps) * k, x, k);
      out(r, y.x);
      out(r + kWarps, y.y);
      r += kWarps;
      continue;
    }
    out(r, WarpDotBf16<kWide>(row, x, k));
  }
}

}  // namespace device
}  // namespace tileinfer
