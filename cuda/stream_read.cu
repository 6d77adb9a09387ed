// The floor's denominator: how fast this GPU streams a buffer the size of the model.
// Each block reads its contiguous share with 16-byte loads, kUnroll in flight per thread,
// and folds the words into one XOR so that nothing is optimised away.
#include "cuda/stream_read.h"

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include "cuda/common.cuh"  // the worker's Dot8 and WarpSum, for StreamGemv

namespace tileinfer {
namespace {

constexpr int kUnroll = 8;

__global__ void StreamReadKernel(const uint4* data, size_t n16, uint32_t* sink) {
  const size_t per_block = (n16 + gridDim.x - 1) / gridDim.x;
  const size_t begin = per_block * blockIdx.x;
  const size_t end = begin + per_block < n16 ? begin + per_block : n16;
  uint32_t acc = 0;
  for (size_t base = begin + threadIdx.x; base < end; base += static_cast<size_t>(blockDim.x) * kUnroll) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const size_t i = base + static_cast<size_t>(u) * blockDim.x;
      v[u] = i < end ? __ldg(data + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x9E3779B9u) sink[blockIdx.x] = acc;  // almost never taken; keeps the loads live
}

// The shared-memory address of p, as the mbarrier and bulk-copy instructions take it.
__device__ __forceinline__ uint32_t SharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Initialises the mbarrier at shared address `bar` for `count` arrivals a phase (sm_90).
__device__ __forceinline__ void InitMbarrier(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// One bulk copy of `bytes` (a multiple of 16) from global `src` to shared address `dst`,
// completing on the mbarrier at `bar`: the calling thread's arrival there with the bytes to
// expect, then the copy (sm_90).
__device__ __forceinline__ void BulkCopy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// StreamReadBulk's kernel (stream_read.h). Block b reads its contiguous share of `bytes`
// in chunks; chunk k lands in stage k % stages, whose mbarrier completes phase k / stages.
__global__ void StreamReadBulkKernel(const uint8_t* data, size_t bytes, uint32_t chunk, int stages, uint32_t* sink) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) uint8_t ring[];
  __shared__ alignas(8) uint64_t full[kMaxBulkStages];
  const size_t n16 = bytes / 16;
  const size_t per_block = (n16 + gridDim.x - 1) / gridDim.x * 16;
  const size_t begin = min(per_block * blockIdx.x, n16 * 16), end = min(begin + per_block, n16 * 16);
  const size_t n_chunks = (end - begin + chunk - 1) / chunk;
  auto bar = [&](int s) { return SharedAddress(&full[s]); };
  auto issue = [&](size_t k) {  // thread 0 only
    const int s = static_cast<int>(k % stages);
    const size_t off = begin + k * chunk;
    const uint32_t size = static_cast<uint32_t>(min(static_cast<size_t>(chunk), end - off));
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    BulkCopy(SharedAddress(ring + static_cast<size_t>(s) * chunk), data + off, size, bar(s));
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) InitMbarrier(bar(s), 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (size_t k = 0; k < n_chunks && k < static_cast<size_t>(stages); ++k) issue(k);
  }
  uint32_t acc = 0;
  for (size_t k = 0; k < n_chunks; ++k) {
    const int s = static_cast<int>(k % stages);
    const uint32_t parity = static_cast<uint32_t>((k / stages) & 1);
    uint32_t done;
    do {
      asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                   : "=r"(done)
                   : "r"(bar(s)), "r"(parity)
                   : "memory");
    } while (!done);
    const uint32_t size = static_cast<uint32_t>(min(static_cast<size_t>(chunk), end - (begin + k * chunk)));
    const uint4* words = reinterpret_cast<const uint4*>(ring + static_cast<size_t>(s) * chunk);
    for (uint32_t i = threadIdx.x; i < size / 16; i += blockDim.x) {
      const uint4 v = words[i];
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    __syncthreads();  // stage s is read: it may be refilled
    if (threadIdx.x == 0 && k + stages < n_chunks) issue(k + stages);
  }
  if (acc == 0x9E3779B9u) sink[blockIdx.x] = acc;  // almost never taken; keeps the reads live
#endif
}

// StreamGemv's kernel (stream_read.h): rows [r0, r1) of block b; warp w takes rows
// r0 + (w + g * warps) * kRows + u, u < kRows, issuing all their loads before the dots.
template <int kRows>
__global__ void StreamGemvKernel(const uint4* w, size_t rows, float* y) {
  constexpr int kPerLane = kGemvStreamK / 8 / 32;  // 16-byte loads per lane per row
  __shared__ __align__(16) float xs[kGemvStreamK];
  for (int i = threadIdx.x; i < kGemvStreamK; i += blockDim.x) xs[i] = 0.125f * static_cast<float>(i % 7 + 1);
  __syncthreads();
  const size_t per_block = (rows + gridDim.x - 1) / gridDim.x;
  const size_t r0 = min(per_block * blockIdx.x, rows), r1 = min(r0 + per_block, rows);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (size_t base = r0 + static_cast<size_t>(warp) * kRows; base < r1; base += static_cast<size_t>(warps) * kRows) {
    uint4 v[kRows][kPerLane];
#pragma unroll
    for (int u = 0; u < kRows; ++u) {
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        v[u][i] = base + u < r1 ? __ldg(w + (base + u) * (kGemvStreamK / 8) + lane + 32 * i) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < kRows; ++u) {
      float acc = 0;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) acc += device::Dot8(v[u][i], xs + (lane + 32 * i) * 8);
      acc = device::WarpSum(acc);
      if (lane == 0 && base + u < r1) y[base + u] = acc;
    }
  }
}

// The q-quantile (0..1) of `v` (not empty): the element at q * (n - 1), rounded down, of
// its sorted copy.
float Quantile(std::vector<float> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1))];
}

// An SM's clock rate in MHz from its clock64 and %globaltimer (ns) read at two moments; 0
// when no time passed (the caller says the rate could not be measured).
double ClockMhz(unsigned long long clk0, unsigned long long clk1, unsigned long long ns0, unsigned long long ns1) {
  const double dns = static_cast<double>(ns1 - ns0);
  return dns > 0 ? static_cast<double>(clk1 - clk0) / dns * 1e3 : 0;
}

// The current device's attributes, each into its int (in order); a CUDA error string, empty
// on success.
std::string DeviceAttributes(std::initializer_list<std::pair<cudaDeviceAttr, int*>> attributes) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  for (const auto& [what, value] : attributes) {
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(value, what, device);
  }
  return err == cudaSuccess ? "" : std::string("cudaDeviceGetAttribute: ") + cudaGetErrorString(err);
}

// check(e, "what"): keeps the first failing CUDA call's error ("what: message") in *fail and is
// true while nothing has failed, so that `check(a, "a") && check(b, "b")` stops at the first.
class FirstError {
 public:
  explicit FirstError(std::string* fail) : fail_(fail) {}
  bool operator()(cudaError_t e, const char* what) const {
    if (e != cudaSuccess && fail_->empty()) *fail_ = std::string(what) + ": " + cudaGetErrorString(e);
    return fail_->empty();
  }

 private:
  std::string* fail_;
};

// Times one launch of `launch` (CUDA events); returns a CUDA error string, empty on success.
template <typename Launch>
std::string Timed(const char* what, Launch&& launch, float* ms) {
  cudaEvent_t start, stop;
  cudaError_t err = cudaEventCreate(&start);
  if (err == cudaSuccess) err = cudaEventCreate(&stop);
  if (err != cudaSuccess) return std::string("cudaEventCreate: ") + cudaGetErrorString(err);
  cudaEventRecord(start);
  launch();
  err = cudaGetLastError();
  cudaEventRecord(stop);
  if (err == cudaSuccess) err = cudaEventSynchronize(stop);
  if (err == cudaSuccess) err = cudaEventElapsedTime(ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return err == cudaSuccess ? "" : std::string(what) + ": " + cudaGetErrorString(err);
}

// A release store of a word at GPU scope (the flag barriers' arrival and wake-up).
__device__ __forceinline__ void StoreRelease(uint32_t* word, uint32_t value) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(word), "r"(value) : "memory");
}

// GridBarrier's kinds that are not a counter barrier (kFlagBarrier, kFlagGather, kCounterWake;
// stream_read.h), each between two __syncthreads: the stamp is the barriers passed + 1;
// `scratch` as GridBarrierKernel's; sleep_ns: device::PollAtLeast's.
template <BarrierKind kKind>
__device__ __forceinline__ void ScratchBarrier(uint32_t* scratch, uint32_t stamp, uint32_t sleep_ns) {
  using device::PollAtLeast;
  const uint32_t n = gridDim.x;
  uint32_t* counter = scratch;
  uint32_t* go = scratch + 2;
  uint32_t* flags = scratch + kBarrierScratchFixed + 2 * n;
  uint32_t* wake = flags + n;  // a 128-byte line a block
  __shared__ uint32_t last;
  __syncthreads();
  if (kKind == kFlagBarrier) {
    if (threadIdx.x == 0) StoreRelease(flags + blockIdx.x, stamp);
    if (threadIdx.x < n) PollAtLeast(flags + threadIdx.x, stamp, sleep_ns);
  } else if (kKind == kFlagGather) {
    if (threadIdx.x == 0) StoreRelease(flags + blockIdx.x, stamp);
    if (blockIdx.x == 0) {
      if (threadIdx.x < n) PollAtLeast(flags + threadIdx.x, stamp, sleep_ns);
      __syncthreads();
      if (threadIdx.x == 0) StoreRelease(go, stamp);
    } else if (threadIdx.x == 0) {
      PollAtLeast(go, stamp, sleep_ns);
    }
  } else if (kKind == kCounterWake) {
    if (threadIdx.x == 0) {
      uint32_t old;
      asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\n" : "=r"(old) : "l"(counter) : "memory");
      last = old == stamp * n - 1;
    }
    __syncthreads();
    if (last) {
      if (threadIdx.x < n) StoreRelease(wake + 32 * threadIdx.x, stamp);
    } else if (threadIdx.x == 0) {
      PollAtLeast(wake + 32 * blockIdx.x, stamp, sleep_ns);
    }
  }
  __syncthreads();
}

// GridBarrier's kernel (stream_read.h). scratch: [0] counter, [1] mismatches, [2] kFlagGather's
// go word, then two rounds of one slot per block (round i % 2 is rewritten only after barrier
// i + 1, which every reader of round i has passed), then the flag kinds' flag per block, then
// kCounterWake's 128-byte line per block.
template <BarrierKind kKind>
__global__ void GridBarrierKernel(int iterations, uint32_t poll_sleep_ns, uint32_t* scratch) {
  const uint32_t n = gridDim.x;
  uint32_t* slots = scratch + kBarrierScratchFixed;
  for (int i = 0; i < iterations; ++i) {
    uint32_t* round = slots + (i & 1) * n;
    const uint32_t stamp = static_cast<uint32_t>(i) + 1;
    if (threadIdx.x == 32) round[blockIdx.x] = stamp;  // not the arriving warp's write
    if (kKind == kGridSync) {
      cooperative_groups::this_grid().sync();
    } else if (kKind == kCounterBarrier) {
      device::CounterBarrier</*kAcquirePoll=*/true>(scratch, stamp * n, poll_sleep_ns);
    } else if (kKind == kCounterRelaxedPoll) {
      device::CounterBarrier</*kAcquirePoll=*/false>(scratch, stamp * n);
    } else {
      ScratchBarrier<kKind>(scratch, stamp, poll_sleep_ns);
    }
    if (threadIdx.x == 0 && *static_cast<volatile uint32_t*>(round + (blockIdx.x + 1) % n) != stamp) {
      atomicAdd(scratch + 1, 1u);
    }
  }
}

// PipelineStream's kernel (stream_read.h).
constexpr int kPipelineMaxSms = 1024;
constexpr int kPipelineWaits = 7;
struct PipelineScratch {
  uint32_t counter;                       // the computing warps' grid barrier
  uint32_t sink;                          // keeps the work live
  uint32_t blocks_on_sm[kPipelineMaxSms];  // blocks per SM (%smid): must be at most 1
  unsigned long long ns[2], clk[2];       // block 0's %globaltimer and clock64 at start and end
  unsigned long long waits[kPipelineWaits];  // block 0's clocks in each wait (PipelineWaits' order);
                                             // [5], [6]: its chained loads' clocks and count
  uint32_t chain[kPipelineMaxSms * 32];      // block b's word for chained loads: [32 b], always 0
};

struct PipelineArgs {
  const uint8_t* data;
  PipelineShape shape;
  uint32_t norm_clk, attention_clk, reduce_clk;  // the shape's spins in SM clocks
  uint32_t prefetch_interval_clk;                 // PipelineShape::l2_prefetch_interval_ns
  uint32_t chunk;
  int stages;
  PipelineScratch* scratch;
};

__device__ __forceinline__ unsigned long long GlobalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Spins `clk` SM clocks (clock64: finer than %globaltimer's steps).
__device__ __forceinline__ void Spin(uint32_t clk) {
  const long long t0 = clock64();
  while (clock64() - t0 < static_cast<long long>(clk)) {
  }
}

// A dependent phase of `clk` SM clocks for the computing warps (PipelineShape::all_warps_spin).
// By default warp 1 (scheduler 1: not the loader's) spins and the others wait at named
// barrier 1, where they issue nothing; clk 0 costs nothing. `all_warps`: every computing warp
// spins, as before.
__device__ __forceinline__ void Phase(uint32_t clk, bool all_warps) {
  if (clk == 0) return;
  if (all_warps) {
    Spin(clk);
    return;
  }
  if (threadIdx.x / 32 == 1) Spin(clk);
  asm volatile("bar.sync 1, %0;\n" ::"n"(kPipelineComputeThreads) : "memory");
}

// A wait that has not ended after ~10 s at 2 GHz is a protocol bug: trap (the launch fails
// with an error) rather than hang.
__device__ __forceinline__ void Watchdog(long long t0) {
  if (clock64() - t0 > 20000000000LL) __trap();
}

// One thread's arrival at a counter barrier: adds 1 to the counter (release), then polls it
// (acquire) until it reaches `target`; the Watchdog counts from t0 (clock64).
__device__ __forceinline__ void ArriveAndWait(uint32_t* counter, uint32_t target, long long t0) {
  device::AddRelease(counter);
  while (device::LoadAcquire(counter) < target) Watchdog(t0);
}

// The computing warps' grid barrier: named barrier 1 (kPipelineComputeThreads threads), then
// thread 0 arrives at the counter for the block (ArriveAndWait).
__device__ __forceinline__ void ComputeBarrier(uint32_t* counter, uint32_t target) {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kPipelineComputeThreads) : "memory");
  if (threadIdx.x == 0) ArriveAndWait(counter, target, clock64());
  asm volatile("bar.sync 1, %0;\n" ::"n"(kPipelineComputeThreads) : "memory");
}

// 8 FMAs of one BF16x8 word against x: the GEMV work per 16 bytes of weights.
__device__ __forceinline__ float Work(const uint4& v, const float* x, float acc) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    acc = fmaf(__uint_as_float(w[e] << 16), x[2 * e], acc);
    acc = fmaf(__uint_as_float(w[e] & 0xFFFF0000u), x[2 * e + 1], acc);
  }
  return acc;
}

// x's 8 values for word i of a wave or chunk: word t + 512 j takes columns (t + 32 j) % 256,
// so that, as in the worker's rows (lane + 32 u), a thread's consecutive words meet
// different x (two 16-byte shared loads per word in both modes).
__device__ __forceinline__ uint32_t XColumn(uint32_t i) {
  return ((i + (i / kPipelineComputeThreads) * 32) % 256) * 8;
}

// Waits until the mbarrier at shared address `bar` has completed the phase of `parity`;
// sleep_ns > 0: __nanosleep(sleep_ns) after every try that found it incomplete, so that the
// waiter does not poll the mbarrier hot. Traps after ~10 s (Watchdog).
__device__ __forceinline__ void WaitParity(uint32_t bar, uint32_t parity, uint32_t sleep_ns = 0) {
  const long long t0 = clock64();
  uint32_t done;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
    if (!done) {
      if (sleep_ns > 0) __nanosleep(sleep_ns);
      Watchdog(t0);
    }
  } while (!done);
}

// Chunk k's stage (k % stages) and use (k / stages), stepped chunk by chunk: no division in
// the loops (a 64-bit one is a call of ~100 instructions, a 32-bit one ~20 dependent ones).
struct RingSlot {
  int stage = 0;
  uint32_t use = 0;
  __device__ __forceinline__ void Next(int stages) {
    if (++stage == stages) {
      stage = 0;
      ++use;
    }
  }
};

// WaitParity, its clocks added to *total.
__device__ __forceinline__ void TimedWaitParity(uint32_t bar, uint32_t parity, unsigned long long* total,
                                                uint32_t sleep_ns = 0) {
  const long long t0 = clock64();
  WaitParity(bar, parity, sleep_ns);
  *total += clock64() - t0;
}

// cp.async.wait_group n for a runtime n in 0..7 (the instruction takes an immediate): waits
// until at most n of this thread's commit groups are still in flight.
__device__ __forceinline__ void CpAsyncWaitGroup(int n) {
  switch (n) {
    case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;\n" ::: "memory"); break;
  }
}

// A phase of the loads mode with PipelineShape::chain_phases or l2_prefetch_interval_ns. Warp 1
// spins `clk` clocks or (chain) loads its block's chain word clk / kIdleRoundTripClk times,
// each address depending on the last value: a fixed number of L2 round trips, as attention's
// and the norm's chains are, so that the phase lasts longer when round trips do (every lane
// the same word), then sets *done = seq. Meanwhile warp 2 (its lane 0 issuing) asks for a
// 16 KB cp.async.bulk.prefetch.L2 every interval_clk of the block's stream from *cursor on,
// never more than `ahead` bytes past `consumed` (offsets in the block's stream of all tokens;
// the address wraps at per_token), until it sees *done == seq. Whole warps take each branch;
// all computing warps then meet at named barrier 1. Warp 1's chained loads' clocks and count
// are added to *chain_clk, *chain_n.
constexpr uint32_t kIdleRoundTripClk = 300;  // an idle L2 hit: 0.148-0.155 us (loaded_barrier)
__device__ __forceinline__ void PrefetchPhase(uint32_t clk, bool chain, const uint32_t* word, uint32_t interval_clk,
                                              const uint8_t* mine, uint64_t per_token, uint64_t consumed,
                                              uint64_t ahead, uint32_t seq, volatile uint32_t* done,
                                              uint64_t* cursor, unsigned long long* chain_clk,
                                              unsigned long long* chain_n) {
  if (clk == 0) return;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 1) {
    if (!chain) {
      Spin(clk);
    } else {
      const long long t0 = clock64();
      uint32_t v = 0;
      const uint32_t n = max(clk / kIdleRoundTripClk, 1u);
      for (uint32_t i = 0; i < n; ++i) {
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(word + v) : "memory");
      }
      *done = seq + (v & 1);  // v is 0: its use waits for the last load
      *chain_clk += clock64() - t0;
      *chain_n += n;
    }
    *done = seq;
  }
  if (warp == 2 && interval_clk > 0) {
    constexpr uint32_t kBytes = 16384;
    long long next = clock64();
    if (*cursor < consumed) *cursor = consumed;
    while (*done != seq) {
      if (clock64() >= next && *cursor + kBytes <= consumed + ahead) {
        const uint8_t* at = mine + *cursor % per_token;
        if (lane == 0) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(at), "r"(kBytes) : "memory");
        *cursor += kBytes;
        next += interval_clk;
      }
    }
  }
  asm volatile("bar.sync 1, %0;\n" ::"n"(kPipelineComputeThreads) : "memory");
}

// Whether the mbarrier at shared address `bar` has completed the phase of `parity`, without
// waiting (mbarrier.test_wait: acquire at CTA scope when it has).
__device__ __forceinline__ bool TestParity(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"(bar), "r"(parity)
               : "memory");
  return done != 0;
}

// PipelineShape::warp_rings' loader: the whole loader warp. Lane j < 16 keeps ring j's state:
// `issued` chunks so far, so its next chunk is k = j + 16 issued (counted over the launch, as
// the computing warps count theirs), for its stage `at`. Each round every such lane whose ring
// has a chunk left and whose stage is free (the stage's empty mbarrier has completed the phase
// of its last use) votes; the warp then copies the voted rings' chunks, lowest ring first:
// each lane 16 bytes at a time with cp.async.cg into the stage, then
// cp.async.mbarrier.arrive.noinc on its full mbarrier (complete when all 32 lanes' copies have
// landed), then one commit group a chunk; with max_in_flight > 0 it first waits until at most
// max_in_flight - 1 of its chunks are still in flight. Rings that are full are passed over, so
// a slow warp holds up only its own ring. Block 0 lane 0 records the clocks with no ring ready
// (*idle_clk) and in the cap's waits (*cap_clk). A round with no ring ready for ~10 s traps.
//
// bulk (PipelineShape::loader_cp_async false): no vote; each lane j < 16 whose ring is ready
// issues that ring's next chunk itself as one cp.async.bulk completing on the stage's full
// mbarrier (count 1: its own arrive.expect_tx), so the 16 rings are fed in parallel, one copy
// instruction a chunk (runs 55-63's cp.async loader measured ~0.35 us a chunk, as if its
// warp's copy instructions were the limit). max_in_flight > 0 (1..16 x stages): at most that
// many chunks issued and not yet seen landed over the 16 rings (each lane tests its ring's
// oldest; the warp sums them), the lowest ready lanes first.
// A run of rounds that found nothing to do: Wait() at each (the first starts the run; a run of
// ~10 s traps, Watchdog), End() at the next round that does something (the run's clocks are
// added to *total).
struct IdleRun {
  long long since = -1;
  __device__ __forceinline__ void Wait() {
    if (since < 0) since = clock64();
    Watchdog(since);
  }
  __device__ __forceinline__ void End(unsigned long long* total) {
    if (since >= 0) *total += clock64() - since;
    since = -1;
  }
};

__device__ void WarpRingsLoader(const uint8_t* mine, uint32_t chunks_per_token, uint32_t total_chunks, uint32_t chunk,
                                int stages, int max_in_flight, bool bulk, uint8_t* ring, uint64_t* full,
                                uint64_t* empty, unsigned long long* idle_clk, unsigned long long* cap_clk) {
  constexpr uint32_t kRings = kPipelineComputeThreads / 32;
  const uint32_t lane = threadIdx.x % 32;
  uint32_t issued = 0;
  RingSlot at;
  // Bulk with a cap: lane j's count of its ring's chunks seen landed (its full mbarrier's phase
  // complete), and the stage of the oldest one not yet seen.
  uint32_t landed = 0;
  RingSlot land_at;
  IdleRun idle, capped;  // rounds with no ring ready; rounds held by the cap
  for (;;) {
    const uint32_t k = lane + kRings * issued;
    const bool left = lane < kRings && k < total_chunks;
    const bool ready =
        left && (at.use == 0 || TestParity(SharedAddress(&empty[lane * stages + at.stage]), (at.use - 1) & 1));
    if (__ballot_sync(~0u, left) == 0) break;
    uint32_t vote = __ballot_sync(~0u, ready);
    if (vote == 0) {
      idle.Wait();
      continue;
    }
    idle.End(idle_clk);
    if (bulk) {  // each ready lane its own ring's chunk, the lowest lanes first up to the cap
      uint32_t allowed = kRings;
      if (max_in_flight > 0) {
        while (lane < kRings && landed < issued &&
               TestParity(SharedAddress(&full[lane * stages + land_at.stage]), land_at.use & 1)) {
          ++landed;
          land_at.Next(stages);
        }
        const uint32_t in_flight = __reduce_add_sync(~0u, lane < kRings ? issued - landed : 0u);
        allowed = in_flight < static_cast<uint32_t>(max_in_flight) ? max_in_flight - in_flight : 0u;
        if (allowed == 0) {
          capped.Wait();
          continue;
        }
        capped.End(cap_clk);
      }
      if (ready && static_cast<uint32_t>(__popc(vote & ((1u << lane) - 1))) < allowed) {
        if (issued - landed == static_cast<uint32_t>(stages)) {
          // The stage's last chunk was consumed (its empty phase is complete), so it landed: count it
          // now, before the new copy, so that land_at never tests a stage whose phase moved on.
          ++landed;
          land_at.Next(stages);
        }
        const uint32_t slot = lane * static_cast<uint32_t>(stages) + static_cast<uint32_t>(at.stage);
        BulkCopy(SharedAddress(ring + static_cast<size_t>(slot) * chunk),
                 mine + static_cast<size_t>(k % chunks_per_token) * chunk, chunk, SharedAddress(&full[slot]));
        ++issued;
        at.Next(stages);
      }
      continue;
    }
    for (; vote != 0; vote &= vote - 1) {
      const int j = __ffs(vote) - 1;
      const uint32_t kj = __shfl_sync(~0u, k, j);
      const int stage = __shfl_sync(~0u, at.stage, j);
      if (max_in_flight > 0) {
        const long long t0 = clock64();
        CpAsyncWaitGroup(max_in_flight - 1);
        *cap_clk += clock64() - t0;
      }
      const uint8_t* src = mine + static_cast<size_t>(kj % chunks_per_token) * chunk;
      const uint32_t slot = static_cast<uint32_t>(j * stages + stage);
      const uint32_t dst = SharedAddress(ring + static_cast<size_t>(slot) * chunk);
      for (uint32_t b = 16 * lane; b < chunk; b += 32 * 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst + b), "l"(src + b) : "memory");
      }
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(SharedAddress(&full[slot]))
                   : "memory");
      asm volatile("cp.async.commit_group;\n" ::: "memory");
      if (lane == static_cast<uint32_t>(j)) {
        ++issued;
        at.Next(stages);
      }
    }
  }
  if (!bulk) asm volatile("cp.async.wait_all;\n" ::: "memory");  // none outstanding at exit
}

// Launch bounds: 17 warps must fit one SM, whose 4 schedulers hold 16 K registers each, 5 of
// the warps on one of them (without them the warp_pipeline code took 98 registers: 0 blocks).
// kWarpRings: PipelineShape::warp_rings (a kernel of its own, so that the other rings' code is
// as before).
template <bool kRing, bool kWarpRings>
__global__ void __launch_bounds__(kPipelineComputeThreads + 32, 1) PipelineKernel(PipelineArgs a) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) uint8_t ring[];
  __shared__ alignas(8) uint64_t full[kMaxBulkStages], empty[kMaxBulkStages];
  // PipelineShape::warp_rings: ring j's stage s is [j * stages + s].
  __shared__ alignas(8) uint64_t wfull[kWarpRings ? 16 * kMaxWarpRingStages : 1],
      wempty[kWarpRings ? 16 * kMaxWarpRingStages : 1];
  __shared__ __align__(16) float xs[2048];
  __shared__ uint32_t phase_done;  // the last phase whose chain or spin has ended (PrefetchPhase)
  const PipelineShape& sh = a.shape;
  const uint32_t per_layer = sh.qkv_bytes + sh.attn_out_bytes + sh.ffn_bytes;
  const uint8_t* mine = a.data + static_cast<size_t>(blockIdx.x) * sh.layers * per_layer;
  for (int i = threadIdx.x; i < 2048; i += blockDim.x) xs[i] = 0.125f * static_cast<float>(i % 7 + 1);
  if (threadIdx.x == 0) {
    phase_done = 0;
    uint32_t sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    if (sm < kPipelineMaxSms) atomicAdd(&a.scratch->blocks_on_sm[sm], 1u);
    if (blockIdx.x == 0) {
      a.scratch->ns[0] = GlobalNs();
      a.scratch->clk[0] = clock64();
    }
  }
  if (kRing && threadIdx.x == 0) {
    if (kWarpRings) {
      for (int s = 0; s < 16 * a.stages; ++s) {
        InitMbarrier(SharedAddress(&wfull[s]), sh.loader_cp_async ? 32u : 1u);  // 32 lanes' arrive.noinc, or
                                                                                // one lane's expect_tx
        InitMbarrier(SharedAddress(&wempty[s]), 1u);  // the ring's warp, lane 0
      }
    }
    for (int s = 0; s < a.stages; ++s) {
      InitMbarrier(SharedAddress(&full[s]), sh.loader_cp_async ? 32u : 1u);
      InitMbarrier(SharedAddress(&empty[s]), sh.one_waiter || sh.warp_chunks ? 1u : kPipelineComputeThreads / 32);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();  // the last barrier of all the block's threads: the roles split here
  const uint32_t waves_bytes[3] = {sh.qkv_bytes, sh.attn_out_bytes, sh.ffn_bytes};
  if (threadIdx.x >= kPipelineComputeThreads) {  // the loader warp (ring only; else it exits)
    if (kRing && kWarpRings) {
      unsigned long long idle = 0, cap = 0;
      const uint32_t chunks_per_token =
          static_cast<uint32_t>(static_cast<uint64_t>(sh.layers) * per_layer / a.chunk);
      WarpRingsLoader(mine, chunks_per_token, chunks_per_token * static_cast<uint32_t>(sh.tokens), a.chunk, a.stages,
                      sh.max_in_flight, !sh.loader_cp_async, ring, wfull, wempty, &idle, &cap);
      if (blockIdx.x == 0 && threadIdx.x == kPipelineComputeThreads) {
        a.scratch->waits[0] = idle;
        a.scratch->waits[1] = cap;
      }
      return;
    }
    if (!kRing || sh.warp_pipeline || (!sh.loader_cp_async && threadIdx.x != kPipelineComputeThreads)) return;
    const uint32_t loader_lane = threadIdx.x - kPipelineComputeThreads;
    unsigned long long empty_wait = 0, cap_wait = 0;  // clocks waiting for a free stage / the cap
    uint64_t k = 0;  // chunk counter, in the computing warps' order
    RingSlot at, landed;  // chunk k's stage and use; chunk k - max_in_flight's
    for (int tok = 0; tok < sh.tokens; ++tok) {
      const uint8_t* src = mine;
      for (int l = 0; l < sh.layers; ++l) {
        for (int w = 0; w < 3; ++w) {
          for (uint32_t off = 0; off < waves_bytes[w]; off += a.chunk, ++k, at.Next(a.stages)) {
            const int s = at.stage;
            if (at.use > 0) {
              TimedWaitParity(SharedAddress(&empty[s]), (at.use - 1) & 1, &empty_wait, sh.loader_sleep_ns);
            }
            if (sh.max_in_flight > 0 && k >= static_cast<uint64_t>(sh.max_in_flight)) {
              // At most max_in_flight copies outstanding: chunk k - max_in_flight has landed.
              // (Its stage cannot have been refilled: that is chunk k - max_in_flight + stages > k.)
              TimedWaitParity(SharedAddress(&full[landed.stage]), landed.use & 1, &cap_wait);
              landed.Next(a.stages);
            }
            if (sh.loader_cp_async) {  // every lane: its 16-byte pieces of the chunk, then its arrival
              const uint32_t dst = SharedAddress(ring + static_cast<size_t>(s) * a.chunk);
              constexpr uint32_t kWarpCopyBytes = 32 * 16;  // one cp.async of 16 bytes per lane
              for (uint32_t b = 16 * loader_lane; b < a.chunk; b += kWarpCopyBytes) {
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst + b), "l"(src + off + b)
                             : "memory");
              }
              asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(SharedAddress(&full[s]))
                           : "memory");
              continue;
            }
            if (sh.fence_each_copy) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            BulkCopy(SharedAddress(ring + static_cast<size_t>(s) * a.chunk), src + off, a.chunk,
                     SharedAddress(&full[s]));
          }
          src += waves_bytes[w];
        }
      }
    }
    if (sh.loader_cp_async) asm volatile("cp.async.wait_all;\n" ::: "memory");  // none outstanding at exit
    if (blockIdx.x == 0 && loader_lane == 0) {
      a.scratch->waits[0] = empty_wait;
      a.scratch->waits[1] = cap_wait;
    }
    return;
  }
  const int lane = threadIdx.x & 31;
  float acc = 0;
  // PipelineShape::x_in_registers: x for this thread's words t + 512 j of a chunk (j < kXWords,
  // chunks of at most 32 KB), read from shared memory once.
  constexpr int kXWords = 4;
  float xr[kXWords][8];
#pragma unroll
  for (int j = 0; j < kXWords; ++j) {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      xr[j][e] = sh.x_in_registers ? xs[XColumn(threadIdx.x + j * kPipelineComputeThreads) + e] : 0.0f;
    }
  }
  uint32_t barriers = 0;
  RingSlot at;  // the next chunk's stage and use
  uint32_t chunk0 = 0;  // warp_chunks, warp_pipeline: the wave's first chunk, counted over all waves
  // PipelineShape::warp_pipeline: this warp's own stages, and its own chunks (k = warp, warp +
  // 16, ...) issued ahead with cp.async, one commit group a chunk, `stages` - 1 ahead.
  const uint32_t my_warp = threadIdx.x / 32, n_warps = kPipelineComputeThreads / 32;
  const uint32_t chunks_per_token = static_cast<uint32_t>(static_cast<uint64_t>(sh.layers) * per_layer / a.chunk);
  const uint32_t total_chunks = chunks_per_token * static_cast<uint32_t>(sh.tokens);
  uint8_t* my_stages = ring + static_cast<size_t>(my_warp) * a.stages * a.chunk;
  uint32_t next_issue = my_warp;  // this warp's next chunk to copy
  RingSlot issue_at, use_at;      // the stages of this warp's next copy and next use (warp_rings: use_at)
  // warp_chunks, warp_pipeline: this warp's first chunk (k % 16 == warp) at or after chunk0.
  auto first_own_chunk = [&] { return chunk0 + (my_warp + n_warps - chunk0 % n_warps) % n_warps; };
  auto issue_next = [&] {
    if (next_issue < total_chunks) {
      const uint8_t* src = mine + static_cast<size_t>(next_issue % chunks_per_token) * a.chunk;
      const uint32_t dst = SharedAddress(my_stages + static_cast<size_t>(issue_at.stage) * a.chunk);
      for (uint32_t b = 16 * lane; b < a.chunk; b += 32 * 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst + b), "l"(src + b) : "memory");
      }
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");  // empty past the end: the counts stay aligned
    next_issue += n_warps;
    issue_at.Next(a.stages);
  };
  if (kRing && sh.warp_pipeline) {
    for (int i = 0; i + 1 < a.stages; ++i) issue_next();
  }
  unsigned long long full_wait = 0, barrier_wait = 0, phase_wait = 0;  // clocks (thread 0's are recorded)
  auto barrier = [&] {
    const long long t0 = clock64();
    ComputeBarrier(&a.scratch->counter, ++barriers * gridDim.x);
    barrier_wait += clock64() - t0;
  };
  // The loads mode's L2 prefetch (PipelineShape::l2_prefetch_interval_ns): the stream offset the
  // computing warps have reached, and warp 2 lane 0's prefetch cursor.
  const uint64_t per_token = static_cast<uint64_t>(sh.layers) * per_layer;
  uint64_t consumed = 0, cursor = 0;
  unsigned long long chain_clk = 0, chain_n = 0;
  uint32_t phase_seq = 0;  // phases begun (PrefetchPhase's seq)
  const bool chain_or_prefetch = (!kRing || kWarpRings) && (sh.chain_phases || a.prefetch_interval_clk > 0);
  auto phase = [&](uint32_t clk) {
    const long long t0 = clock64();
    if (chain_or_prefetch) {
      PrefetchPhase(clk, sh.chain_phases, a.scratch->chain + 32 * blockIdx.x, a.prefetch_interval_clk, mine, per_token,
                    consumed, sh.l2_prefetch_ahead, ++phase_seq, &phase_done, &cursor, &chain_clk, &chain_n);
    } else {
      Phase(clk, sh.all_warps_spin);
    }
    phase_wait += clock64() - t0;
  };
  for (int tok = 0; tok < sh.tokens; ++tok) {
    const uint8_t* src = mine;
    for (int l = 0; l < sh.layers; ++l) {
      for (int w = 0; w < 3; ++w) {
        phase(a.norm_clk);
        if (kRing && sh.warp_pipeline) {
          const uint32_t n = waves_bytes[w] / a.chunk;
          for (uint32_t k = first_own_chunk(); k < chunk0 + n; k += n_warps) {
            issue_next();  // stages - 1 chunks ahead of this one
            const long long t0 = clock64();
            CpAsyncWaitGroup(a.stages - 1);  // this chunk's group has landed (every lane's own copies)
            __syncwarp();                    // ... and every lane's copies are visible to the warp
            full_wait += clock64() - t0;
            const uint4* words =
                reinterpret_cast<const uint4*>(my_stages + static_cast<size_t>(use_at.stage) * a.chunk);
            for (uint32_t i = lane; sh.work && i < a.chunk / 16; i += 32) acc = Work(words[i], xs + XColumn(i), acc);
            __syncwarp();  // the stage is read: a later issue_next may refill it
            use_at.Next(a.stages);
          }
          chunk0 += n;
        } else if (kRing && kWarpRings) {
          // This warp's own chunks (k % 16 == warp) from its own ring, in order: wait for the
          // stage, read all of it, release it (lane 0; empty counts 1).
          const uint32_t n = waves_bytes[w] / a.chunk;
          for (uint32_t k = first_own_chunk(); k < chunk0 + n; k += n_warps) {
            const uint32_t slot = my_warp * static_cast<uint32_t>(a.stages) + static_cast<uint32_t>(use_at.stage);
            TimedWaitParity(SharedAddress(&wfull[slot]), use_at.use & 1, &full_wait);
            const uint4* words = reinterpret_cast<const uint4*>(ring + static_cast<size_t>(slot) * a.chunk);
            for (uint32_t i = lane; sh.work && i < a.chunk / 16; i += 32) acc = Work(words[i], xs + XColumn(i), acc);
            __syncwarp();
            if (lane == 0) {
              asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(SharedAddress(&wempty[slot])) : "memory");
            }
            use_at.Next(a.stages);
          }
          chunk0 += n;
        } else if (kRing && sh.warp_chunks) {
          // Chunk k (counted over all waves) is warp k % 16's alone: it waits for it, reads all
          // of it (16 words a lane for 8 KB) and releases it (empty counts 1). With 16 stages,
          // stage k % 16 is always that warp's, so its parity wait is never two phases ahead
          // (with 12 stages a warp's next chunk, k + 16, could find the stage still holding
          // chunk k + 4 and its wait pass at once: call Z12's first try trapped on that).
          const uint32_t n = waves_bytes[w] / a.chunk;
          for (uint32_t k = first_own_chunk(); k < chunk0 + n; k += n_warps) {
            const uint32_t s = k % static_cast<uint32_t>(a.stages);
            TimedWaitParity(SharedAddress(&full[s]), (k / static_cast<uint32_t>(a.stages)) & 1, &full_wait);
            const uint4* words = reinterpret_cast<const uint4*>(ring + static_cast<size_t>(s) * a.chunk);
            for (uint32_t i = lane; sh.work && i < a.chunk / 16; i += 32) acc = Work(words[i], xs + XColumn(i), acc);
            __syncwarp();
            if (lane == 0) {
              asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(SharedAddress(&empty[s])) : "memory");
            }
          }
          chunk0 += n;
        } else if (kRing) {
          for (uint32_t off = 0; off < waves_bytes[w]; off += a.chunk, at.Next(a.stages)) {
            const int s = at.stage;
            const uint32_t parity = at.use & 1;
            if (!sh.one_waiter) {
              TimedWaitParity(SharedAddress(&full[s]), parity, &full_wait);
            } else {  // thread 0 waits; named barrier 1 passes the stage on to the other warps
              if (threadIdx.x == 0) TimedWaitParity(SharedAddress(&full[s]), parity, &full_wait);
              asm volatile("bar.sync 1, %0;\n" ::"n"(kPipelineComputeThreads) : "memory");
            }
            const uint4* words = reinterpret_cast<const uint4*>(ring + static_cast<size_t>(s) * a.chunk);
            if (sh.x_in_registers) {  // the same words of every chunk meet the same x: xr
#pragma unroll
              for (int j = 0; j < kXWords; ++j) {
                const uint32_t i = threadIdx.x + j * kPipelineComputeThreads;
                if (sh.work && i < a.chunk / 16) acc = Work(words[i], xr[j], acc);
              }
            } else {
              for (uint32_t i = threadIdx.x; sh.work && i < a.chunk / 16; i += kPipelineComputeThreads) {
                acc = Work(words[i], xs + XColumn(i), acc);
              }
            }
            if (!sh.one_waiter) {
              __syncwarp();
              if (lane == 0) {
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(SharedAddress(&empty[s])) : "memory");
              }
            } else {  // every warp has read the stage: thread 0 releases it
              asm volatile("bar.sync 1, %0;\n" ::"n"(kPipelineComputeThreads) : "memory");
              if (threadIdx.x == 0) {
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(SharedAddress(&empty[s])) : "memory");
              }
            }
          }
        } else {
          const uint4* words = reinterpret_cast<const uint4*>(src);
          const uint32_t n16 = waves_bytes[w] / 16;
          for (uint32_t base = threadIdx.x; base < n16; base += kPipelineComputeThreads * kUnroll) {
            uint4 v[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {  // the index clamped, not the load predicated: all 8 in flight
              v[u] = __ldg(words + min(base + u * kPipelineComputeThreads, n16 - 1));
            }
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
              const uint32_t i = base + u * kPipelineComputeThreads;
              if (i < n16) acc = Work(v[u], xs + XColumn(i), acc);
            }
          }
        }
        src += waves_bytes[w];
        consumed += waves_bytes[w];
        barrier();
        if (w == 0) {  // ATTENTION
          phase(a.attention_clk);
          barrier();
        }
      }
      phase(a.reduce_clk);  // FFN_REDUCE
      barrier();
    }
  }
  if (kRing && sh.warp_pipeline) asm volatile("cp.async.wait_all;\n" ::: "memory");  // none outstanding at exit
  if (acc == 1234.5f) a.scratch->sink = blockIdx.x;  // almost never taken; keeps the work live
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    a.scratch->ns[1] = GlobalNs();
    a.scratch->clk[1] = clock64();
    a.scratch->waits[2] = full_wait;
    a.scratch->waits[3] = barrier_wait;
    a.scratch->waits[4] = phase_wait;
  }
  if (blockIdx.x == 0 && threadIdx.x == 32) {
    a.scratch->waits[5] = chain_clk;
    a.scratch->waits[6] = chain_n;
  }
#endif
}

// The streaming warps' stop signal: an mbarrier in shared memory, initialised for one arrival,
// which the barrier warp makes when its rounds are done (SetStop); the streaming threads test
// its first phase without waiting (StopSet: mbarrier.test_wait, acquire at CTA scope). It
// carries no data, only "stop streaming". Calls CL6-CL7b: a volatile int poll drew racecheck
// hazards, and a shared atomic read in its place cost the streams 1-14% (more the fewer loads a
// lane a round), wherever in the round it was issued.
__device__ __forceinline__ void SetStop(uint64_t* stop) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(SharedAddress(stop)) : "memory");
}
__device__ __forceinline__ bool StopSet(uint64_t* stop) {
  uint32_t done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(SharedAddress(stop))
      : "memory");
  return done != 0;
}

// Thread t's share of a block's stream until the stop signal: 16-byte loads of words[t + j x
// threads] (j counting up, wrapping at n16, a multiple of threads x kUnroll), kUnroll in flight,
// folded into *acc. Returns the bytes read. LoadedBarrierKernel's and ClusterRoundsKernel's
// streaming warps.
template <int kUnroll>
__device__ __forceinline__ unsigned long long StreamUntilStop(const uint4* words, size_t n16, uint32_t threads,
                                                              uint64_t* stop, uint32_t* acc) {
  unsigned long long bytes = 0;
  size_t base = threadIdx.x;
  while (!StopSet(stop)) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = __ldg(words + base + static_cast<size_t>(u) * threads);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) *acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    base += static_cast<size_t>(threads) * kUnroll;
    if (base >= n16) base = threadIdx.x;
    bytes += 16 * kUnroll;
  }
  return bytes;
}

// LoadedBarrier's kernel (stream_read.h). kUnroll: the plain loads in flight per lane, or 0
// for the bulk ring. scratch: [0] the barrier counter, [32 * (b + 1)] block b's L2 word (a
// 128-byte line each).
struct LoadedBarrierArgs {
  const uint8_t* data;
  size_t per_block;  // bytes each block streams, wrapping around
  int stream_warps, stages;
  uint32_t chunk;
  bool quiet_block0;
  int barriers;
  uint32_t gap_clk;
  uint32_t* scratch;
  unsigned long long* streamed;  // bytes, summed over blocks
  uint32_t* record;              // block 0: per barrier, its clocks and the load's clocks
  unsigned long long* clock_ns;  // block 0: clock64 and %globaltimer at start and end
  uint32_t* sink;
};

template <int kUnroll>
__global__ void __launch_bounds__((kLoadedBarrierWarp + 1) * 32, 1) LoadedBarrierKernel(LoadedBarrierArgs a) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) uint8_t ring[];
  __shared__ alignas(8) uint64_t full[kMaxBulkStages];
  __shared__ alignas(8) uint64_t stop;  // the streaming warps' stop signal (SetStop, StopSet)
  __shared__ uint32_t loaded;           // the timed load's value (its use)
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint8_t* mine = a.data + blockIdx.x * a.per_block;
  if (threadIdx.x == 0) {
    InitMbarrier(SharedAddress(&stop), 1);
    if (kUnroll == 0) {
      for (int s = 0; s < a.stages; ++s) {
        InitMbarrier(SharedAddress(&full[s]), 1);
      }
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();  // the last barrier of all the block's threads: the roles split here
  if (warp == kLoadedBarrierWarp) {
    if (lane != 0) return;
    const bool recorder = blockIdx.x == 0;
    if (recorder) {
      a.clock_ns[0] = clock64();
      a.clock_ns[1] = GlobalNs();
    }
    const uint32_t* word = a.scratch + 32 * (blockIdx.x + 1);
    for (int i = 0; i < a.barriers; ++i) {
      Spin(a.gap_clk);
      // One L2 round trip: the loaded value is stored to shared memory before the second
      // clock read (a warp issues in order, and the store waits for the value).
      uint32_t v;
      const long long t0 = clock64();
      asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(word) : "memory");
      asm volatile("st.volatile.shared.u32 [%0], %1;\n" ::"r"(SharedAddress(&loaded)), "r"(v) : "memory");
      const long long t1 = clock64();
      const long long t2 = clock64();
      ArriveAndWait(a.scratch, static_cast<uint32_t>(i + 1) * gridDim.x, t2);
      const long long t3 = clock64();
      if (recorder) {
        a.record[2 * i] = static_cast<uint32_t>(t3 - t2);
        a.record[2 * i + 1] = static_cast<uint32_t>(t1 - t0);
      }
    }
    SetStop(&stop);
    if (recorder) {
      a.clock_ns[2] = clock64();
      a.clock_ns[3] = GlobalNs();
    }
    return;
  }
  if (a.quiet_block0 && blockIdx.x == 0) return;
  unsigned long long bytes = 0;
  uint32_t acc = 0;
  if (kUnroll == 0) {  // thread 0 keeps `stages` bulk copies in flight
    // k % stages and k / stages as measured in calls Z and Z2 (not RingSlot): with 2 or more
    // stages these copies ran at HBM's rate (4.4-4.7 TB/s), which the divisions did not limit.
    if (threadIdx.x != 0) return;
    uint64_t k = 0;
    size_t off = 0;
    while (!StopSet(&stop)) {
      const int s = static_cast<int>(k % a.stages);
      const uint64_t use = k / a.stages;
      if (use > 0) WaitParity(SharedAddress(&full[s]), static_cast<uint32_t>((use - 1) & 1));
      BulkCopy(SharedAddress(ring + static_cast<size_t>(s) * a.chunk), mine + off, a.chunk, SharedAddress(&full[s]));
      off = off + a.chunk < a.per_block ? off + a.chunk : 0;
      ++k;
    }
    // None in flight at exit: the last `stages` copies (each stage's latest phase).
    for (uint64_t j = k > static_cast<uint64_t>(a.stages) ? k - a.stages : 0; j < k; ++j) {
      WaitParity(SharedAddress(&full[j % a.stages]), static_cast<uint32_t>((j / a.stages) & 1));
    }
    bytes = k * a.chunk;
  } else {
    if (warp >= a.stream_warps) return;
    // per_block is a multiple of threads x kUnroll (the host rounds it).
    bytes = StreamUntilStop<(kUnroll > 0 ? kUnroll : 1)>(reinterpret_cast<const uint4*>(mine), a.per_block / 16,
                                                       static_cast<uint32_t>(a.stream_warps) * 32, &stop, &acc);
  }
  atomicAdd(a.streamed, bytes);
  if (acc == 0x9E3779B9u) a.sink[blockIdx.x] = acc;  // almost never taken; keeps the loads live
#endif
}

// ClusterRounds' kernel (stream_read.h). scratch, in 32-bit words zeroed by the host: [0] the
// grid counter, [32] the mismatches, [64 + 32 g] group g's counter (a 128-byte line each),
// then two rounds of one slot per block (round i's at i % 2: rewritten in round i + 2, after
// the barrier of round i + 1, which every reader of round i has passed), then the L2 chain
// (kClusterChainWords words, word j holding the next index; set by the host).
constexpr uint32_t kClusterChainWords = 4096, kClusterSmemChainWords = 1024, kClusterChainStep = 33;
struct ClusterArgs {
  const uint8_t* data;
  size_t per_block;  // bytes each block streams, a multiple of one pass of its loads; 0: none
  int iterations;
  uint32_t groups;  // blocks / cluster size
  uint32_t* scratch;
  const uint32_t* chain;          // the L2 chain, in scratch
  unsigned long long* streamed;   // bytes, summed over blocks
  uint32_t* sink;
};

#if __CUDA_ARCH__ >= 900
// The shared address `addr` of this block mapped to the same variable in block `rank` of the
// cluster (a shared::cluster address).
__device__ __forceinline__ uint32_t MapToRank(uint32_t addr, uint32_t rank) {
  uint32_t mapped;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(mapped) : "r"(addr), "r"(rank));
  return mapped;
}

__device__ __forceinline__ uint32_t LoadClusterShared(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared::cluster.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

// LoadClusterShared as a relaxed atomic at cluster scope (an atomic OR of 0).
__device__ __forceinline__ uint32_t AtomicLoadClusterShared(uint32_t addr) {
  uint32_t v;
  asm volatile("atom.relaxed.cluster.shared::cluster.or.b32 %0, [%1], 0;\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

// Waits until the mbarrier at shared address `bar` completes the phase of `parity`, with
// acquire semantics at cluster scope (the arrivals and complete_tx come from other blocks of
// the cluster, released at cluster scope); Watchdog as WaitParity's.
__device__ __forceinline__ void WaitParityCluster(uint32_t bar, uint32_t parity) {
  const long long t0 = clock64();
  uint32_t done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (!done) Watchdog(t0);
  } while (!done);
}

// One kClusterMbarrier round `r` of the calling warp (every lane): after __syncwarp (lane 0's
// earlier writes ordered before every lane's arrival), lane k < size arrives, with release
// semantics at cluster scope, on mbarrier r % 2 of block k of the cluster; lane 0 waits for
// its own mbarrier's phase r / 2 (WaitParityCluster); then __syncwarp. The arrivals go out in parallel: from one thread, one after
// another, they cost ~0.17 us each (call CL: 3.0 us a round at size 16).
__device__ __forceinline__ void ClusterMbarrierRound(const uint64_t* mbar, uint32_t r, uint32_t size, int lane) {
  const uint32_t own = SharedAddress(&mbar[r & 1]);
  __syncwarp();
  if (static_cast<uint32_t>(lane) < size) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(MapToRank(own, lane))
                 : "memory");
  }
  if (lane == 0) WaitParityCluster(own, (r >> 1) & 1);
  __syncwarp();
}

// One kStAsyncHandoff round `r` of the calling warp (every lane; stream_read.h): lane 0
// arrives on its own mbarrier r % 2 expecting size x 4 bytes; lane k < size stores `stamp`
// into block k's inbox[r % 2][rank] by st.async, completing on block k's mbarrier r % 2 (the
// complete_tx has release semantics at cluster scope; no fence waits for the SM's loads); lane
// 0 waits for its mbarrier's phase r / 2 (WaitParityCluster) and returns its inbox slot of the
// next rank.
__device__ __forceinline__ uint32_t StAsyncRound(const uint64_t* full, uint32_t (*inbox)[16], uint32_t r,
                                                 uint32_t rank, uint32_t size, uint32_t stamp, int lane) {
  const uint32_t own = SharedAddress(&full[r & 1]);
  if (lane == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(own), "r"(size * 4u) : "memory");
  }
  if (static_cast<uint32_t>(lane) < size) {
    const uint32_t k = static_cast<uint32_t>(lane);
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];\n" ::"r"(
                     MapToRank(SharedAddress(&inbox[r & 1][rank]), k)),
                 "r"(stamp), "r"(MapToRank(own, k))
                 : "memory");
  }
  uint32_t seen = 0;
  if (lane == 0) {
    WaitParityCluster(own, (r >> 1) & 1);
    seen = inbox[r & 1][(rank + 1) % size];
  }
  __syncwarp();
  return seen;
}

// kClusterStreamUnroll 16-byte loads of thread t's words of one round, `base` + u x threads
// (ld.global.nc; volatile, so that no barrier after them is moved above them).
__device__ __forceinline__ void LoadRound(const uint4* words, size_t base, uint32_t threads,
                                          uint4 (&v)[kClusterStreamUnroll]) {
#pragma unroll
  for (int u = 0; u < kClusterStreamUnroll; ++u) {
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w)
                 : "l"(words + base + static_cast<size_t>(u) * threads)
                 : "memory");
  }
}
#endif

template <ClusterKind kKind>
__global__ void __launch_bounds__(kClusterThreads, 1) ClusterRoundsKernel(ClusterArgs a) {
#if __CUDA_ARCH__ >= 900
  constexpr bool kAcross = LoadsAcrossBarrier(kKind);
  __shared__ alignas(8) uint64_t mbar[2];
  __shared__ alignas(8) uint64_t full[2];  // kStAsyncHandoff's, one arrival a phase
  __shared__ uint32_t inbox[2][16];        // kStAsyncHandoff's: [round % 2][sender's rank]
  __shared__ uint32_t slot[2];
  __shared__ uint32_t smem_chain[kClusterSmemChainWords];
  __shared__ alignas(8) uint64_t stop;  // the streaming warps' stop signal (SetStop, StopSet)
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const uint32_t rank = cluster.block_rank(), size = cluster.num_blocks();
  const uint32_t b = blockIdx.x, n = gridDim.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (uint32_t j = threadIdx.x; j < kClusterSmemChainWords; j += blockDim.x) {
    smem_chain[j] = (j + kClusterChainStep) % kClusterSmemChainWords;
  }
  if (threadIdx.x == 0) {
    InitMbarrier(SharedAddress(&stop), 1);
    slot[0] = slot[1] = 0;
    InitMbarrier(SharedAddress(&mbar[0]), size);
    InitMbarrier(SharedAddress(&mbar[1]), size);
    InitMbarrier(SharedAddress(&full[0]), 1);
    InitMbarrier(SharedAddress(&full[1]), 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  cluster.sync();  // every block's mbarriers and chain are set before any remote use
  uint32_t* mismatches = a.scratch + 32;
  uint32_t* slots = a.scratch + 64 + 32 * a.groups;
  const uint32_t next_rank = (rank + 1) % size;
  const uint4* words = reinterpret_cast<const uint4*>(a.data + b * a.per_block);
  const size_t n16 = a.per_block / 16;
  uint32_t acc = 0;
  if (kKind == kClusterHardware || kAcross) {  // every thread of the block
    size_t base = threadIdx.x;
    unsigned long long bytes = 0;
    for (int i = 0; i < a.iterations; ++i) {
      const uint32_t stamp = static_cast<uint32_t>(i) + 1;
      uint4 v[kClusterStreamUnroll];
      constexpr bool kGlobalSlot = kKind == kGridCounterLoads || kKind == kGridSplitLoads;
      if (kGlobalSlot && threadIdx.x == 32) slots[(i & 1) * n + b] = stamp;
      if (!kGlobalSlot && threadIdx.x == 32) slot[i & 1] = stamp;  // not the checker's write
      if (kKind == kGridSplitLoads) {  // arrive (release) before the loads, wait after them
        __syncthreads();
        if (threadIdx.x == 0) device::AddRelease(a.scratch);
      }
      if (kAcross) LoadRound(words, base, kClusterThreads, v);
      __syncwarp();  // the barriers below are .aligned: every warp converged
      if (kKind == kGridSplitLoads) {
        if (threadIdx.x == 0) {
          const long long t0 = clock64();
          while (device::LoadAcquire(a.scratch) < stamp * n) Watchdog(t0);
        }
        __syncthreads();
      } else if (kKind == kClusterHardware || kKind == kClusterHardwareLoads) {
        cluster.sync();
      } else if (kKind == kClusterRelaxedLoads) {
        asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
        asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
      } else if (kKind == kGridCounterLoads) {
        device::CounterBarrier(a.scratch, stamp * n);
      } else {
        __syncthreads();
      }
      if (threadIdx.x == 0) {
        uint32_t seen;
        if (kGlobalSlot) {
          asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(slots + (i & 1) * n + (b + 1) % n)
                       : "memory");
        } else if (kKind == kClusterRelaxedLoads || kKind == kLoadsOnly) {
          seen = stamp;  // no ordering promised: nothing to check
        } else {
          seen = LoadClusterShared(MapToRank(SharedAddress(&slot[i & 1]), next_rank));
        }
        if (seen != stamp) atomicAdd(mismatches, 1u);
      }
      if (kAcross) {
#pragma unroll
        for (int u = 0; u < kClusterStreamUnroll; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
        base += static_cast<size_t>(kClusterThreads) * kClusterStreamUnroll;
        if (base >= n16) base = threadIdx.x;
        bytes += 16 * kClusterStreamUnroll;
      }
    }
    if (kAcross) atomicAdd(a.streamed, bytes);
  } else if (warp == kClusterSyncWarp) {
    uint32_t index = 0, missed = 0, r = 0;
    for (int i = 0; i < a.iterations; ++i) {
      const uint32_t stamp = static_cast<uint32_t>(i) + 1;
      uint32_t* round = slots + (i & 1) * n;
      if (kKind == kClusterMbarrier) {
        // The slot's write and the other rank's read are atomics: their order runs through the
        // remote mbarrier arrivals of rounds i and i + 1, which racecheck does not follow.
        if (lane == 0) atomicExch(&slot[i & 1], stamp);
        ClusterMbarrierRound(mbar, r++, size, lane);
        if (lane == 0) missed += AtomicLoadClusterShared(MapToRank(SharedAddress(&slot[i & 1]), next_rank)) != stamp;
      } else if (kKind == kStAsyncHandoff) {
        const uint32_t seen = StAsyncRound(full, inbox, r++, rank, size, stamp, lane);
        if (lane == 0) missed += seen != stamp;
      } else if (kKind == kHierarchicalGrid) {
        if (lane == 0) round[b] = stamp;
        ClusterMbarrierRound(mbar, r++, size, lane);
        if (lane == 0 && rank == 0) ArriveAndWait(a.scratch, stamp * a.groups, clock64());
        ClusterMbarrierRound(mbar, r++, size, lane);
      } else if (lane != 0) {
        continue;
      } else if (kKind == kGroupCounter) {
        round[b] = stamp;
        ArriveAndWait(a.scratch + 64 + 32 * (b / size), stamp * size, clock64());
        missed += device::LoadAcquire(round + (b / size) * size + next_rank) != stamp;
      } else if (kKind == kGridCounter) {
        round[b] = stamp;
        ArriveAndWait(a.scratch, stamp * n, clock64());
      } else if (kKind == kRemoteSmemChase) {
        index = LoadClusterShared(MapToRank(SharedAddress(&smem_chain[index]), next_rank));
      } else if (kKind == kL2Chase) {
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(index) : "l"(a.chain + index) : "memory");
      }
      if (lane == 0 && (kKind == kGridCounter || kKind == kHierarchicalGrid)) {
        uint32_t seen;
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(round + (b + 1) % n) : "memory");
        missed += seen != stamp;
      }
    }
    if (lane == 0) {
      if (missed != 0) atomicAdd(mismatches, missed);
      if (index == 0xFFFFFFFFu) a.sink[b] = index;  // never taken; keeps the chase live
      SetStop(&stop);
    }
  } else if (a.per_block != 0 && warp < kClusterSyncWarp) {
    atomicAdd(a.streamed, StreamUntilStop<kClusterStreamUnroll>(words, n16, kClusterSyncWarp * 32, &stop, &acc));
  }
  if (acc == 0x9E3779B9u) a.sink[b] = acc;  // almost never taken; keeps the loads live
  __syncwarp();
  cluster.sync();  // no block leaves while another may still read its shared memory
#endif
}

}  // namespace

std::string StreamRead(const void* data, size_t bytes, int blocks, int threads, uint32_t* sink, float* ms) {
  return Timed("stream read", [&] {
    StreamReadKernel<<<blocks, threads>>>(static_cast<const uint4*>(data), bytes / 16, sink);
  }, ms);
}

std::string StreamReadBulk(const void* data, size_t bytes, int blocks, int threads, uint32_t chunk, int stages,
                           uint32_t* sink, float* ms) {
  int major = 0, optin = 0;
  const std::string attr_err = DeviceAttributes(
      {{cudaDevAttrComputeCapabilityMajor, &major}, {cudaDevAttrMaxSharedMemoryPerBlockOptin, &optin}});
  if (!attr_err.empty()) return attr_err;
  if (major < 9) return "bulk copies need sm_90 or later; this GPU is sm_" + std::to_string(major) + "x";
  const size_t ring = static_cast<size_t>(stages) * chunk;
  if (chunk == 0 || chunk % 16 != 0 || stages < 1 || stages > kMaxBulkStages || ring > static_cast<size_t>(optin)) {
    return "bulk ring of " + std::to_string(stages) + " x " + std::to_string(chunk) +
           " bytes: chunk must be a positive multiple of 16, stages 1.." + std::to_string(kMaxBulkStages) +
           ", and the ring at most " + std::to_string(optin) + " bytes of shared memory";
  }
  cudaError_t err =
      cudaFuncSetAttribute(StreamReadBulkKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(ring));
  if (err != cudaSuccess) return std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(err);
  return Timed("bulk stream read", [&] {
    StreamReadBulkKernel<<<blocks, threads, ring>>>(static_cast<const uint8_t*>(data), bytes, chunk, stages, sink);
  }, ms);
}

// StreamGemvKernel<rows_in_flight>, or nullptr for a count it is not built for.
const void* GemvKernel(int rows_in_flight) {
  switch (rows_in_flight) {
    case 1: return reinterpret_cast<const void*>(StreamGemvKernel<1>);
    case 2: return reinterpret_cast<const void*>(StreamGemvKernel<2>);
    case 4: return reinterpret_cast<const void*>(StreamGemvKernel<4>);
    default: return nullptr;
  }
}

std::string StreamGemvBlocksPerSm(int threads, int rows_in_flight, int* blocks_per_sm) {
  const void* kernel = GemvKernel(rows_in_flight);
  if (kernel == nullptr) return "rows_in_flight " + std::to_string(rows_in_flight) + ": give 1, 2 or 4";
  const cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, kernel, threads, 0);
  if (err != cudaSuccess) return std::string("cudaOccupancyMaxActiveBlocksPerMultiprocessor: ") + cudaGetErrorString(err);
  return "";
}

std::string StreamGemv(const void* data, size_t bytes, int blocks, int threads, int rows_in_flight, float* y,
                       float* ms) {
  const void* kernel = GemvKernel(rows_in_flight);
  if (kernel == nullptr) return "rows_in_flight " + std::to_string(rows_in_flight) + ": give 1, 2 or 4";
  const uint4* w = static_cast<const uint4*>(data);
  size_t rows = bytes / (2 * kGemvStreamK);
  void* args[] = {&w, &rows, &y};
  return Timed("gemv stream read", [&] { cudaLaunchKernel(kernel, dim3(blocks), dim3(threads), args, 0, nullptr); }, ms);
}

namespace {

// Whether `blocks` blocks of `threads` of `kernel` can all be resident (a cooperative
// launch needs it): "" or the error, `what` naming the caller.
std::string CooperativeFits(const void* kernel, int blocks, int threads, const char* what) {
  int sms = 0, per_sm = 0;
  const std::string attr_err = DeviceAttributes({{cudaDevAttrMultiProcessorCount, &sms}});
  if (!attr_err.empty()) return attr_err;
  const cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0);
  if (err != cudaSuccess) return std::string(what) + " occupancy: " + cudaGetErrorString(err);
  if (blocks < 1 || blocks > sms * per_sm) {
    return std::to_string(blocks) + " blocks of " + std::to_string(threads) + " threads: a cooperative launch holds 1.." +
           std::to_string(sms * per_sm) + " on this GPU";
  }
  return "";
}

// One timed cooperative launch (Timed): "" or the launch's or the run's error.
std::string TimedCooperative(const char* what, const void* kernel, int blocks, int threads, void** args, float* ms) {
  std::string launch_err;
  const std::string timed = Timed(what, [&] {
    const cudaError_t e = cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3(threads), args, 0, nullptr);
    if (e != cudaSuccess) launch_err = std::string("cudaLaunchCooperativeKernel: ") + cudaGetErrorString(e);
  }, ms);
  return launch_err.empty() ? timed : launch_err;
}

}  // namespace

// GridBarrierKernel<kind>, or nullptr for a kind it is not built for.
const void* BarrierKernel(BarrierKind kind) {
  switch (kind) {
    case kGridSync: return reinterpret_cast<const void*>(GridBarrierKernel<kGridSync>);
    case kCounterBarrier: return reinterpret_cast<const void*>(GridBarrierKernel<kCounterBarrier>);
    case kCounterRelaxedPoll: return reinterpret_cast<const void*>(GridBarrierKernel<kCounterRelaxedPoll>);
    case kFlagBarrier: return reinterpret_cast<const void*>(GridBarrierKernel<kFlagBarrier>);
    case kFlagGather: return reinterpret_cast<const void*>(GridBarrierKernel<kFlagGather>);
    case kCounterWake: return reinterpret_cast<const void*>(GridBarrierKernel<kCounterWake>);
    default: return nullptr;
  }
}

std::string GridBarrier(int blocks, int threads, BarrierKind kind, int iterations, uint32_t poll_sleep_ns,
                        uint32_t* scratch, float* ms, uint32_t* mismatches) {
  const void* kernel = BarrierKernel(kind);
  if (kernel == nullptr) {
    return "barrier kind " + std::to_string(static_cast<int>(kind)) +
           ": give kGridSync, kCounterBarrier, kCounterRelaxedPoll, kFlagBarrier, kFlagGather or kCounterWake";
  }
  if ((kind == kFlagBarrier || kind == kFlagGather || kind == kCounterWake) && threads < blocks) {
    return "threads " + std::to_string(threads) + " for " + std::to_string(blocks) +
           " blocks: this barrier polls or wakes a block a thread; give at least as many threads as blocks";
  }
  if (poll_sleep_ns > 1000000) return "poll_sleep_ns " + std::to_string(poll_sleep_ns) + ": give at most 1 ms";
  if (poll_sleep_ns != 0 && (kind == kGridSync || kind == kCounterRelaxedPoll)) {
    return "poll_sleep_ns " + std::to_string(poll_sleep_ns) +
           ": grid.sync() and the relaxed-poll counter do not sleep; give 0 for them";
  }
  if (iterations < 1) return "iterations " + std::to_string(iterations) + ": give at least 1";
  if (threads < 64 || threads % 32 != 0) {
    return "threads " + std::to_string(threads) +
           ": give a multiple of 32, at least 64 (warp 1 writes the check's slot)";
  }
  const std::string fits = CooperativeFits(kernel, blocks, threads, "barrier");
  if (!fits.empty()) return fits;
  cudaError_t err = cudaMemset(
      scratch, 0, (kBarrierScratchFixed + kBarrierScratchPerBlock * static_cast<size_t>(blocks)) * sizeof(uint32_t));
  if (err != cudaSuccess) return std::string("cudaMemset (barrier scratch): ") + cudaGetErrorString(err);
  void* args[] = {&iterations, &poll_sleep_ns, &scratch};
  const std::string timed = TimedCooperative("grid barrier", kernel, blocks, threads, args, ms);
  if (!timed.empty()) return timed;
  err = cudaMemcpy(mismatches, scratch + 1, sizeof(uint32_t), cudaMemcpyDeviceToHost);
  return err == cudaSuccess ? "" : std::string("cudaMemcpy (mismatches): ") + cudaGetErrorString(err);
}

// HandoffRounds' kernel (stream_read.h). plain: 2 x n words; tagged: 2 x n 8-byte words;
// mismatches: one word.
template <HandoffKind kKind>
__global__ void __launch_bounds__(kHandoffThreads, 1)
    HandoffRoundsKernel(int n, int groups, int iterations, uint32_t* plain, unsigned long long* tagged,
                        uint32_t* mismatches) {
  constexpr bool kTagged = kKind == kHandoffTagged || kKind == kHandoffTaggedBatch;
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  const int b = static_cast<int>(blockIdx.x), blocks = static_cast<int>(gridDim.x);
  const int mine = static_cast<int>(static_cast<long long>(b) * n / blocks);
  const int mine_end = static_cast<int>(static_cast<long long>(b + 1) * n / blocks);
  const int g = b * groups / blocks, per_group = blocks / groups;
  const int read_begin = static_cast<int>(static_cast<long long>(g * per_group) * n / blocks);
  const int read_end = static_cast<int>(static_cast<long long>((g + 1) * per_group) * n / blocks);
  uint32_t missed = 0;
  for (int i = 0; i < iterations; ++i) {
    const size_t half = static_cast<size_t>(i & 1) * static_cast<size_t>(n);
    if (kKind == kHandoffGridSyncOnly) {
      grid.sync();
      continue;
    }
    for (int j = mine + static_cast<int>(threadIdx.x); j < mine_end; j += kHandoffThreads) {
      const uint32_t v = HandoffValue(i, j);
      if (kTagged) {
        const unsigned long long w = static_cast<unsigned long long>(i + 1) << 32 | v;
        asm volatile("st.relaxed.gpu.global.u64 [%0], %1;\n" ::"l"(tagged + half + j), "l"(w) : "memory");
      } else {
        plain[half + j] = v;
      }
    }
    if (kKind == kHandoffGridSync) grid.sync();
    // Each thread's words of the group's: all loads issued before any is checked (the tagged
    // kind's low 32 bits are the value).
    unsigned long long w[kHandoffWordsPerThread];
#pragma unroll
    for (int k = 0; k < kHandoffWordsPerThread; ++k) {
      const int j = read_begin + static_cast<int>(threadIdx.x) + k * kHandoffThreads;
      if (j >= read_end) break;
      if (kTagged) {
        asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];\n" : "=l"(w[k]) : "l"(tagged + half + j) : "memory");
      } else {
        w[k] = plain[half + j];  // a plain load, as the worker reads its inputs after grid.sync()
      }
    }
    // kHandoffTagged: each stale word reloaded until its tag is the round's, one word after
    // another; kHandoffTaggedBatch: all of a thread's stale words reloaded together, a pass at
    // a time.
    const long long t0 = clock64();
    if (kKind == kHandoffTagged) {
#pragma unroll
      for (int k = 0; k < kHandoffWordsPerThread; ++k) {
        const int j = read_begin + static_cast<int>(threadIdx.x) + k * kHandoffThreads;
        if (j >= read_end) break;
        while (static_cast<uint32_t>(w[k] >> 32) != static_cast<uint32_t>(i + 1)) {
          asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];\n" : "=l"(w[k]) : "l"(tagged + half + j) : "memory");
          Watchdog(t0);
        }
      }
    }
    for (bool waiting = kKind == kHandoffTaggedBatch; waiting;) {
      waiting = false;
#pragma unroll
      for (int k = 0; k < kHandoffWordsPerThread; ++k) {
        const int j = read_begin + static_cast<int>(threadIdx.x) + k * kHandoffThreads;
        if (j < read_end) waiting |= static_cast<uint32_t>(w[k] >> 32) != static_cast<uint32_t>(i + 1);
      }
      if (!waiting) break;
#pragma unroll
      for (int k = 0; k < kHandoffWordsPerThread; ++k) {
        const int j = read_begin + static_cast<int>(threadIdx.x) + k * kHandoffThreads;
        if (j < read_end && static_cast<uint32_t>(w[k] >> 32) != static_cast<uint32_t>(i + 1)) {
          asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];\n" : "=l"(w[k]) : "l"(tagged + half + j) : "memory");
        }
      }
      Watchdog(t0);
    }
#pragma unroll
    for (int k = 0; k < kHandoffWordsPerThread; ++k) {
      const int j = read_begin + static_cast<int>(threadIdx.x) + k * kHandoffThreads;
      if (j >= read_end) break;
      missed += static_cast<uint32_t>(w[k]) != HandoffValue(i, j);
    }
    __syncthreads();  // the block has its inputs
  }
  if (missed != 0) atomicAdd(mismatches, missed);
}

// HandoffRoundsKernel<kind>, or nullptr for a kind it is not built for.
const void* HandoffKernel(HandoffKind kind) {
  switch (kind) {
    case kHandoffGridSync: return reinterpret_cast<const void*>(HandoffRoundsKernel<kHandoffGridSync>);
    case kHandoffTagged: return reinterpret_cast<const void*>(HandoffRoundsKernel<kHandoffTagged>);
    case kHandoffGridSyncOnly: return reinterpret_cast<const void*>(HandoffRoundsKernel<kHandoffGridSyncOnly>);
    case kHandoffTaggedBatch: return reinterpret_cast<const void*>(HandoffRoundsKernel<kHandoffTaggedBatch>);
    default: return nullptr;
  }
}

std::string HandoffRounds(int blocks, HandoffKind kind, int n, int groups, int iterations, HandoffResult* result) {
  const void* kernel = HandoffKernel(kind);
  if (kernel == nullptr) {
    return "handoff kind " + std::to_string(static_cast<int>(kind)) +
           ": give kHandoffGridSync, kHandoffTagged, kHandoffGridSyncOnly or kHandoffTaggedBatch";
  }
  if (n < std::max(blocks, 1) || n > kHandoffMaxWords) {
    return "handoff of " + std::to_string(n) + " words over " + std::to_string(blocks) + " blocks: give " +
           std::to_string(std::max(blocks, 1)) + ".." + std::to_string(kHandoffMaxWords) +
           " (every block writes at least one word)";
  }
  if (groups < 1 || blocks % groups != 0) {
    return std::to_string(groups) + " groups of " + std::to_string(blocks) + " blocks: give a divisor of the block count";
  }
  const long long largest = (static_cast<long long>(n) * (blocks / groups) + blocks - 1) / blocks + 1;
  if (largest > static_cast<long long>(kHandoffThreads) * kHandoffWordsPerThread) {
    return "handoff of " + std::to_string(n) + " words in " + std::to_string(groups) + " groups: a group's words (up to " +
           std::to_string(largest) + ") must be at most " + std::to_string(kHandoffThreads * kHandoffWordsPerThread) +
           "; give more groups or fewer words";
  }
  if (iterations < 1 || iterations >= INT32_MAX) {
    return "iterations " + std::to_string(iterations) + ": give 1.." + std::to_string(INT32_MAX - 1);
  }
  const std::string fits = CooperativeFits(kernel, blocks, kHandoffThreads, "handoff");
  if (!fits.empty()) return fits;
  uint32_t* plain = nullptr;
  unsigned long long* tagged = nullptr;
  uint32_t* mismatches = nullptr;
  std::string fail;
  const FirstError check(&fail);
  const size_t words = 2 * static_cast<size_t>(n);
  if (check(cudaMalloc(&plain, words * sizeof(uint32_t)), "cudaMalloc (handoff plain)") &&
      check(cudaMalloc(&tagged, words * sizeof(unsigned long long)), "cudaMalloc (handoff tagged)") &&
      check(cudaMalloc(&mismatches, sizeof(uint32_t)), "cudaMalloc (mismatches)") &&
      check(cudaMemset(plain, 0xFF, words * sizeof(uint32_t)), "cudaMemset (handoff plain)") &&
      check(cudaMemset(tagged, 0, words * sizeof(unsigned long long)), "cudaMemset (handoff tagged)") &&
      check(cudaMemset(mismatches, 0, sizeof(uint32_t)), "cudaMemset (mismatches)")) {
    void* args[] = {&n, &groups, &iterations, &plain, &tagged, &mismatches};
    fail = TimedCooperative("handoff rounds", kernel, blocks, kHandoffThreads, args, &result->ms);
    if (fail.empty()) {
      check(cudaMemcpy(&result->mismatches, mismatches, sizeof(uint32_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
    }
  }
  cudaFree(plain);
  cudaFree(tagged);
  cudaFree(mismatches);
  return fail;
}

// ReduceRounds' kernel (stream_read.h).
template <ReduceKind kKind>
__global__ void ReduceRoundsKernel(int adders, int iterations, int hidden, uint32_t spread_clk, float* parts,
                                   float* out, unsigned long long* acc) {
  __shared__ float group_sums[1024];
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  const int b = static_cast<int>(blockIdx.x), n = static_cast<int>(gridDim.x), threads = static_cast<int>(blockDim.x);
  const int begin = static_cast<int>(static_cast<long long>(b) * hidden / n);
  const int rows = static_cast<int>(static_cast<long long>(b + 1) * hidden / n) - begin;
  const uint32_t delay_clk = static_cast<uint32_t>(static_cast<unsigned long long>(spread_clk) * b / n);
  const bool adds = kKind != kBarrierOnly && b < adders;  // uniform over the block
  for (int i = 0; i < iterations; ++i) {
    Spin(delay_clk);
    for (int r = threadIdx.x; r < hidden && adds; r += threads) {
      const float v = ReducePartValue(b, r, i);
      if (kKind == kFixedPointRed) {
        const long long q = __float2ll_rn(v * 4294967296.0f);
        device::RedAddU64(acc + r, q);
      } else {
        parts[static_cast<size_t>(b) * hidden + r] = v;
      }
    }
    grid.sync();
    if (kKind != kPartsReduce || rows == 0) continue;
    const int groups = threads / rows, g = threadIdx.x / rows, rr = threadIdx.x % rows;
    if (g < groups) {
      float sum = 0;
#pragma unroll 4
      for (int s = g; s < n; s += groups) sum += parts[static_cast<size_t>(s) * hidden + begin + rr];
      group_sums[g * rows + rr] = sum;
    }
    __syncthreads();
    if (threadIdx.x < rows) {
      float total = 0;
      for (int gg = 0; gg < groups; ++gg) total += group_sums[gg * rows + threadIdx.x];
      out[begin + threadIdx.x] = 0.5f * out[begin + threadIdx.x] + total;
    }
    grid.sync();  // also: no block rewrites parts before every block has read them
  }
}

std::string ReduceRounds(int blocks, int threads, int hidden, ReduceKind kind, int adders, int iterations,
                         uint32_t spread_clk, float* parts, float* out, unsigned long long* acc, float* ms) {
  const void* kernel = nullptr;
  switch (kind) {
    case kBarrierOnly: kernel = reinterpret_cast<const void*>(ReduceRoundsKernel<kBarrierOnly>); break;
    case kPartsBarrier: kernel = reinterpret_cast<const void*>(ReduceRoundsKernel<kPartsBarrier>); break;
    case kPartsReduce: kernel = reinterpret_cast<const void*>(ReduceRoundsKernel<kPartsReduce>); break;
    case kFixedPointRed: kernel = reinterpret_cast<const void*>(ReduceRoundsKernel<kFixedPointRed>); break;
    default:
      return "reduce kind " + std::to_string(static_cast<int>(kind)) +
             ": give kBarrierOnly, kPartsBarrier, kPartsReduce or kFixedPointRed";
  }
  if (iterations < 1) return "iterations " + std::to_string(iterations) + ": give at least 1";
  if (kind == kFixedPointRed ? adders < 1 || adders > blocks : adders != blocks) {
    return "adders " + std::to_string(adders) + ": give 1.." + std::to_string(blocks) +
           " for kFixedPointRed, blocks (" + std::to_string(blocks) + ") for the other kinds";
  }
  if (threads < 32 || threads > 1024 || threads % 32 != 0) {
    return "threads " + std::to_string(threads) + ": give a multiple of 32 in 32..1024";
  }
  if (hidden < 1 || static_cast<long long>(hidden) > static_cast<long long>(blocks) * threads) {
    return "hidden " + std::to_string(hidden) + ": give 1.." +
           std::to_string(static_cast<long long>(blocks) * threads) + " (a block's rows must fit its threads)";
  }
  if ((kind == kPartsBarrier || kind == kPartsReduce) && parts == nullptr) return "reduce: parts is null";
  if (kind == kPartsReduce && out == nullptr) return "reduce: out is null";
  if (kind == kFixedPointRed && acc == nullptr) return "reduce: acc is null";
  const std::string fits = CooperativeFits(kernel, blocks, threads, "reduce");
  if (!fits.empty()) return fits;
  void* args[] = {&adders, &iterations, &hidden, &spread_clk, &parts, &out, &acc};
  return TimedCooperative("reduce rounds", kernel, blocks, threads, args, ms);
}

std::string PipelineStream(const void* data, size_t bytes, int blocks, const PipelineShape& shape, bool ring,
                           uint32_t chunk, int stages, float* ms, float* sm_mhz, PipelineWaits* waits) {
  int major = 0, optin = 0, sms = 0, khz = 0;  // khz: the SM's peak clock
  const std::string attr_err =
      DeviceAttributes({{cudaDevAttrComputeCapabilityMajor, &major}, {cudaDevAttrMaxSharedMemoryPerBlockOptin, &optin},
                        {cudaDevAttrMultiProcessorCount, &sms}, {cudaDevAttrClockRate, &khz}});
  if (!attr_err.empty()) return attr_err;
  if (major < 9) return "the pipeline model needs sm_90 or later; this GPU is sm_" + std::to_string(major) + "x";
  if (shape.tokens < 1 || shape.layers < 1) return "pipeline: tokens and layers must be at least 1";
  if (!shape.work && !ring) return "pipeline: work = false is for the ring only (loads without work are no model)";
  if (shape.fence_each_copy && !ring) return "pipeline: fence_each_copy is for the ring only";
  if (shape.loader_cp_async && (!ring || shape.fence_each_copy)) {
    return "pipeline: loader_cp_async is for the ring only, without fence_each_copy (bulk copies only)";
  }
  if (shape.one_waiter && !ring) return "pipeline: one_waiter is for the ring only";
  if (shape.x_in_registers && (!ring || chunk > 32768)) {
    return "pipeline: x_in_registers is for the ring only, with chunks of at most 32 KB (4 words a thread)";
  }
  if (ring && (shape.l2_prefetch_interval_ns > 0 || (shape.chain_phases && !shape.warp_rings))) {
    return "pipeline: chain_phases is for the loads mode and warp_rings only, l2_prefetch_interval_ns for the loads "
           "mode only";
  }
  // A block's bytes a token (every layer's three waves).
  const size_t per_block = static_cast<size_t>(shape.layers) * (shape.qkv_bytes + shape.attn_out_bytes + shape.ffn_bytes);
  if (shape.l2_prefetch_interval_ns > 0 &&
      (shape.l2_prefetch_ahead < 16384 || shape.l2_prefetch_interval_ns > 1000000u || per_block % 16384 != 0)) {
    return "pipeline: l2_prefetch_interval_ns at most 1 ms, l2_prefetch_ahead at least one 16 KB prefetch, and a "
           "token's bytes a multiple of 16 KB (each prefetch stays inside the block's bytes)";
  }
  if (shape.all_warps_spin && (shape.chain_phases || shape.l2_prefetch_interval_ns > 0)) {
    return "pipeline: all_warps_spin does not combine with chain_phases or the L2 prefetch (warp 1 runs those phases)";
  }
  if (shape.loader_sleep_ns > 0 && (!ring || shape.loader_sleep_ns > 1000000u)) {
    return "pipeline: loader_sleep_ns is for the ring only, at most 1 ms (__nanosleep's range)";
  }
  if (shape.warp_rings) {
    const int most = shape.loader_cp_async ? 8 : 16 * stages;
    if (shape.max_in_flight < 0 || shape.max_in_flight > most) {
      return "pipeline: max_in_flight " + std::to_string(shape.max_in_flight) + ": give 0 (no cap) or 1.." +
             std::to_string(most) + " chunks for warp_rings (cp.async.wait_group's range; bulk: the rings' stages)";
    }
  } else if (shape.max_in_flight < 0 || (shape.max_in_flight > 0 && (!ring || shape.loader_cp_async)) ||
             (ring && shape.max_in_flight >= stages)) {
    return "pipeline: max_in_flight " + std::to_string(shape.max_in_flight) +
           ": give 0 (no cap) or, for the bulk-copy ring only, the most copies outstanding, fewer than its " +
           std::to_string(stages) + " stages (the cap waits on a stage by its parity)";
  }
  if (static_cast<uint64_t>(shape.tokens) * shape.layers * 5 * blocks >= (1ull << 31)) {
    return "pipeline: tokens x layers x 5 barriers x blocks must stay below 2^31 (the barrier counter)";
  }
  if (std::max(shape.norm_ns, std::max(shape.attention_ns, shape.reduce_ns)) > 1000000000u) {
    return "pipeline: every spin must be at most 1 s";
  }
  if (chunk == 0 || chunk % 16 != 0 || shape.qkv_bytes % chunk != 0 || shape.attn_out_bytes % chunk != 0 ||
      shape.ffn_bytes % chunk != 0) {
    return "pipeline: chunk " + std::to_string(chunk) + " must be a positive multiple of 16 dividing every wave's bytes (" +
           std::to_string(shape.qkv_bytes) + ", " + std::to_string(shape.attn_out_bytes) + ", " +
           std::to_string(shape.ffn_bytes) + ")";
  }
  if (blocks < 1 || blocks > sms || sms > kPipelineMaxSms || per_block * blocks > bytes) {
    return "pipeline: " + std::to_string(blocks) + " blocks of " + std::to_string(per_block) +
           " bytes: give 1.." + std::to_string(sms) + " blocks (one per SM) within the " + std::to_string(bytes) +
           "-byte buffer";
  }
  // warp_chunks and warp_pipeline count chunks over the whole launch in 32 bits.
  const uint64_t launch_chunks = static_cast<uint64_t>(shape.tokens) * per_block / chunk;
  if (shape.warp_chunks && (!ring || shape.one_waiter || shape.x_in_registers ||
                            stages != kPipelineComputeThreads / 32 || launch_chunks >= (1ull << 31))) {
    return "pipeline: warp_chunks is for the ring of 16 stages only (one a computing warp: a parity wait must never be "
           "more than one phase ahead), without one_waiter or x_in_registers, and fewer than 2^31 chunks";
  }
  if (shape.warp_pipeline &&
      (!ring || shape.loader_cp_async || shape.one_waiter || shape.x_in_registers || shape.warp_chunks ||
       shape.max_in_flight != 0 || shape.fence_each_copy || shape.loader_sleep_ns != 0 || stages < 2 || stages > 8 ||
       chunk % 512 != 0 || launch_chunks >= (1ull << 31))) {
    return "pipeline: warp_pipeline is for the ring alone (no other ring option), 2..8 stages a warp, chunks a "
           "multiple of 512 bytes (16 a lane), fewer than 2^31 chunks";
  }
  if (shape.warp_rings &&
      (!ring || shape.one_waiter || shape.x_in_registers || shape.warp_chunks || shape.warp_pipeline ||
       shape.fence_each_copy || shape.loader_sleep_ns != 0 || shape.all_warps_spin || stages < 2 ||
       stages > kMaxWarpRingStages || chunk % 512 != 0 || launch_chunks >= (1ull << 31))) {
    return "pipeline: warp_rings is for the ring alone (with loader_cp_async, max_in_flight and chain_phases "
           "only), 2.." + std::to_string(kMaxWarpRingStages) +
           " stages a warp, chunks a multiple of 512 bytes (16 a lane), fewer than 2^31 chunks";
  }
  const bool per_warp = shape.warp_pipeline || shape.warp_rings;  // stages are each warp's
  const size_t ring_bytes = ring ? static_cast<size_t>(stages) * chunk * (per_warp ? kPipelineComputeThreads / 32 : 1) : 0;
  const size_t static_bytes =
      2 * (kMaxBulkStages + (shape.warp_rings ? 16 * kMaxWarpRingStages : 1)) * sizeof(uint64_t) + 2048 * sizeof(float);
  if (ring && (stages < 1 || stages > kMaxBulkStages || ring_bytes + static_bytes > static_cast<size_t>(optin))) {
    return "pipeline ring of " + std::to_string(stages) + " x " + std::to_string(chunk) + " bytes: stages 1.." +
           std::to_string(kMaxBulkStages) + ", and the ring at most " + std::to_string(optin - static_bytes) +
           " bytes of shared memory";
  }
  const void* kernel = !ring               ? reinterpret_cast<const void*>(PipelineKernel<false, false>)
                       : shape.warp_rings ? reinterpret_cast<const void*>(PipelineKernel<true, true>)
                                          : reinterpret_cast<const void*>(PipelineKernel<true, false>);
  // A ring asks for at least half the opt-in shared memory, so that no SM holds two blocks
  // (bulk copies do not use L1, which the rest leaves). The loads mode keeps the default
  // carveout, as the worker does; blocks_on_sm below catches a second block on an SM.
  const size_t dynamic_bytes = ring ? std::max(ring_bytes, static_cast<size_t>(optin) / 2) : 0;
  cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dynamic_bytes));
  if (err != cudaSuccess) return std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(err);
  int per_sm = 0;
  err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kPipelineComputeThreads + 32, dynamic_bytes);
  if (err != cudaSuccess) return std::string("cudaOccupancyMaxActiveBlocksPerMultiprocessor: ") + cudaGetErrorString(err);
  if (per_sm < 1) {
    return "pipeline: a block of " + std::to_string(kPipelineComputeThreads + 32) + " threads with " +
           std::to_string(dynamic_bytes) + " bytes of shared memory does not fit one SM (registers or shared memory)";
  }
  PipelineScratch* scratch = nullptr;
  err = cudaMalloc(&scratch, sizeof(PipelineScratch));
  if (err != cudaSuccess) return std::string("cudaMalloc (pipeline scratch): ") + cudaGetErrorString(err);
  err = cudaMemset(scratch, 0, sizeof(PipelineScratch));
  auto clk = [&](uint32_t ns) { return static_cast<uint32_t>(static_cast<uint64_t>(ns) * khz / 1000000); };
  PipelineArgs args{static_cast<const uint8_t*>(data), shape, clk(shape.norm_ns), clk(shape.attention_ns),
                    clk(shape.reduce_ns), clk(shape.l2_prefetch_interval_ns), chunk, stages, scratch};
  void* params[] = {&args};
  const int threads = kPipelineComputeThreads + 32;
  std::string fail = err == cudaSuccess ? "" : std::string("cudaMemset (pipeline scratch): ") + cudaGetErrorString(err);
  if (fail.empty()) {
    const std::string timed = Timed("pipeline", [&] {
      const cudaError_t e =
          cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3(threads), params, dynamic_bytes, nullptr);
      if (e != cudaSuccess) fail = std::string("cudaLaunchCooperativeKernel: ") + cudaGetErrorString(e);
    }, ms);
    if (fail.empty()) fail = timed;
  }
  PipelineScratch host;
  if (fail.empty()) {
    err = cudaMemcpy(&host, scratch, sizeof(host), cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) fail = std::string("cudaMemcpy (pipeline scratch): ") + cudaGetErrorString(err);
  }
  cudaFree(scratch);
  if (!fail.empty()) return fail;
  for (int sm = 0; sm < sms; ++sm) {
    if (host.blocks_on_sm[sm] > 1) {
      return "pipeline: " + std::to_string(host.blocks_on_sm[sm]) + " blocks ran on SM " + std::to_string(sm) +
             " (the model needs one per SM; give fewer blocks or more shared memory per block)";
    }
  }
  *sm_mhz = static_cast<float>(ClockMhz(host.clk[0], host.clk[1], host.ns[0], host.ns[1]));
  if (waits != nullptr && *sm_mhz > 0) {
    const double per_layer = static_cast<double>(*sm_mhz) * shape.tokens * shape.layers;  // clocks -> us a layer
    waits->loader_empty_us = static_cast<float>(host.waits[0] / per_layer);
    waits->loader_cap_us = static_cast<float>(host.waits[1] / per_layer);
    waits->compute_full_us = static_cast<float>(host.waits[2] / per_layer);
    waits->compute_barrier_us = static_cast<float>(host.waits[3] / per_layer);
    waits->compute_phase_us = static_cast<float>(host.waits[4] / per_layer);
    waits->chain_load_us =
        host.waits[6] > 0 ? static_cast<float>(host.waits[5] / static_cast<double>(host.waits[6]) / *sm_mhz) : 0.0f;
  }
  return "";
}

std::string LoadedBarrier(const void* data, size_t bytes, int blocks, const LoadedBarrierShape& shape,
                          LoadedBarrierResult* result) {
  int major = 0, optin = 0, sms = 0, khz = 0;
  const std::string attr_err =
      DeviceAttributes({{cudaDevAttrComputeCapabilityMajor, &major}, {cudaDevAttrMaxSharedMemoryPerBlockOptin, &optin},
                        {cudaDevAttrMultiProcessorCount, &sms}, {cudaDevAttrClockRate, &khz}});
  if (!attr_err.empty()) return attr_err;
  if (major < 9) return "the loaded-barrier model needs sm_90 or later; this GPU is sm_" + std::to_string(major) + "x";
  const bool bulk = shape.bulk_stages > 0;
  if (shape.bulk_stages < 0) {
    return "loaded barrier: bulk_stages " + std::to_string(shape.bulk_stages) + ": give 0 (plain loads) or 1.." +
           std::to_string(kMaxBulkStages);
  }
  if (shape.stream_warps < 0 || shape.stream_warps > kLoadedBarrierWarp || (bulk && shape.stream_warps != 0)) {
    return "loaded barrier: stream_warps " + std::to_string(shape.stream_warps) + ": give 0.." +
           std::to_string(kLoadedBarrierWarp) + ", and 0 with bulk_stages";
  }
  if (!bulk && shape.unroll != 1 && shape.unroll != 2 && shape.unroll != 4 && shape.unroll != 8) {
    return "loaded barrier: unroll " + std::to_string(shape.unroll) + ": give 1, 2, 4 or 8";
  }
  if (shape.barriers < 10 || static_cast<uint64_t>(shape.barriers) * blocks >= (1ull << 31) ||
      shape.gap_ns > 1000000u) {
    return "loaded barrier: give 10 or more barriers (barriers x blocks below 2^31) and a gap of at most 1 ms";
  }
  const size_t ring_bytes = bulk ? static_cast<size_t>(shape.bulk_stages) * shape.bulk_chunk : 0;
  if (bulk && (shape.bulk_stages > kMaxBulkStages || shape.bulk_chunk == 0 || shape.bulk_chunk % 16 != 0 ||
               ring_bytes + 1024 > static_cast<size_t>(optin))) {
    return "loaded barrier: a ring of " + std::to_string(shape.bulk_stages) + " x " + std::to_string(shape.bulk_chunk) +
           " bytes: stages 1.." + std::to_string(kMaxBulkStages) + ", chunks a positive multiple of 16, at most " +
           std::to_string(optin - 1024) + " bytes";
  }
  // Each block's share: a multiple of the chunk (bulk) or of one round of the stream
  // threads' loads.
  const bool stream = bulk || shape.stream_warps > 0;
  const size_t step =
      bulk ? shape.bulk_chunk : static_cast<size_t>(std::max(shape.stream_warps, 1)) * 32 * shape.unroll * 16;
  const size_t per_block = blocks > 0 ? bytes / blocks / step * step : 0;
  if (blocks < 1 || blocks > sms || (stream && per_block == 0)) {
    return "loaded barrier: " + std::to_string(blocks) + " blocks: give 1.." + std::to_string(sms) +
           " (one per SM), each with a share of the " + std::to_string(bytes) + "-byte buffer that its stream divides";
  }
  const void* kernel = bulk                  ? reinterpret_cast<const void*>(LoadedBarrierKernel<0>)
                       : shape.unroll == 1 ? reinterpret_cast<const void*>(LoadedBarrierKernel<1>)
                       : shape.unroll == 2 ? reinterpret_cast<const void*>(LoadedBarrierKernel<2>)
                       : shape.unroll == 4 ? reinterpret_cast<const void*>(LoadedBarrierKernel<4>)
                                           : reinterpret_cast<const void*>(LoadedBarrierKernel<8>);
  // More than half the opt-in shared memory: no SM can hold a second block.
  const size_t dynamic_bytes = std::max(ring_bytes, static_cast<size_t>(optin) / 2 + 1024);
  cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dynamic_bytes));
  if (err != cudaSuccess) return std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(err);
  const size_t scratch_words = 32 * (static_cast<size_t>(blocks) + 1);
  uint32_t* scratch = nullptr;
  unsigned long long* counters = nullptr;  // [0] streamed bytes, [1..4] block 0's clock / ns
  uint32_t* record = nullptr;
  uint32_t* sink = nullptr;
  std::string fail;
  const FirstError check(&fail);
  if (check(cudaMalloc(&scratch, scratch_words * sizeof(uint32_t)), "cudaMalloc (loaded barrier scratch)") &&
      check(cudaMalloc(&counters, 5 * sizeof(unsigned long long)), "cudaMalloc (loaded barrier counters)") &&
      check(cudaMalloc(&record, 2 * static_cast<size_t>(shape.barriers) * sizeof(uint32_t)), "cudaMalloc (record)") &&
      check(cudaMalloc(&sink, static_cast<size_t>(blocks) * sizeof(uint32_t)), "cudaMalloc (sink)") &&
      check(cudaMemset(scratch, 0, scratch_words * sizeof(uint32_t)), "cudaMemset (scratch)") &&
      check(cudaMemset(counters, 0, 5 * sizeof(unsigned long long)), "cudaMemset (counters)")) {
    const uint32_t gap_clk = static_cast<uint32_t>(static_cast<uint64_t>(shape.gap_ns) * khz / 1000000);
    LoadedBarrierArgs args{static_cast<const uint8_t*>(data), per_block, shape.stream_warps, shape.bulk_stages,
                           shape.bulk_chunk, shape.quiet_block0, shape.barriers, gap_clk, scratch, counters,
                           record, counters + 1, sink};
    void* params[] = {&args};
    float ms = 0;
    const std::string timed = Timed("loaded barrier", [&] {
      check(cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3((kLoadedBarrierWarp + 1) * 32), params,
                                        dynamic_bytes, nullptr),
            "cudaLaunchCooperativeKernel");
    }, &ms);
    if (fail.empty()) fail = timed;
    unsigned long long host_counters[5];
    std::vector<uint32_t> host_record(2 * static_cast<size_t>(shape.barriers));
    double mhz = 0;
    if (check(cudaMemcpy(host_counters, counters, sizeof(host_counters), cudaMemcpyDeviceToHost), "cudaMemcpy") &&
        check(cudaMemcpy(host_record.data(), record, host_record.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost),
              "cudaMemcpy")) {
      mhz = ClockMhz(host_counters[1], host_counters[3], host_counters[2], host_counters[4]);
      if (mhz <= 0) fail = "loaded barrier: block 0's clock rate could not be measured";
    }
    if (fail.empty()) {
      std::vector<float> barrier_us, load_us;
      for (int i = shape.barriers / 10; i < shape.barriers; ++i) {
        barrier_us.push_back(static_cast<float>(host_record[2 * i] / mhz));
        load_us.push_back(static_cast<float>(host_record[2 * i + 1] / mhz));
      }
      result->barrier_us_median = Quantile(barrier_us, 0.5);
      result->barrier_us_p90 = Quantile(barrier_us, 0.9);
      result->load_us_median = Quantile(load_us, 0.5);
      result->load_us_p90 = Quantile(load_us, 0.9);
      result->stream_gbps = ms > 0 ? static_cast<float>(host_counters[0] / (ms * 1e6)) : 0.0f;
      result->sm_mhz = static_cast<float>(mhz);
    }
  }
  cudaFree(scratch);
  cudaFree(counters);
  cudaFree(record);
  cudaFree(sink);
  return fail;
}

namespace {

// IdleCopyRounds' kernel (stream_read.h). table: kIdleCopyTable words, table[i] = the next
// index; chain_clk: block 0's phase-A clocks per round; clocks: block 0's clock64 and
// %globaltimer at start and end; sink: one word a thread.
constexpr uint32_t kIdleCopyTable = 4096;  // 16 KB: stays in L2
struct IdleCopyArgs {
  const uint4* data;
  size_t bytes;
  IdleCopyShape shape;
  const uint32_t* table;
  unsigned long long* chain_clk;
  unsigned long long* clocks;
  uint32_t* sink;
};

__global__ void __launch_bounds__(kIdleCopyThreads, 1) IdleCopyKernel(IdleCopyArgs a) {
  extern __shared__ uint4 stage[];  // shape.copy_bytes
  __shared__ uint32_t next;
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  const size_t b = blockIdx.x, n = gridDim.x, threads = blockDim.x;
  const bool owner = static_cast<int>(b) < a.shape.owners;
  const size_t task16 = a.shape.task_bytes / 16, copy16 = owner ? 0 : a.shape.copy_bytes / 16;
  const size_t span16 = a.bytes / 16 - task16 + 1;  // task starts in [0, span16)
  uint32_t idx = static_cast<uint32_t>(b) % kIdleCopyTable, acc = 0;
  if (b == 0 && threadIdx.x == 0) {
    a.clocks[0] = clock64();
    a.clocks[1] = GlobalNs();
  }
  for (int r = 0; r < a.shape.rounds; ++r) {
    const uint4* task = a.data + ((static_cast<size_t>(r) * n + b) * task16) % span16;
    if (owner) {  // phase A: the chain
      const long long c0 = clock64();
      for (int k = 0; k < a.shape.chain; ++k) {
        if (threadIdx.x == 0) next = __ldcg(a.table + idx);
        __syncthreads();
        idx = next;
        __syncthreads();
      }
      if (b == 0 && threadIdx.x == 0) a.chain_clk[r] = static_cast<unsigned long long>(clock64() - c0);
    } else if (copy16 > 0) {  // phase A: the copies, left in flight
      for (size_t i = threadIdx.x; i < copy16; i += threads) {
        const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(stage + i));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(task + i) : "memory");
      }
      asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
    grid.sync();
    if (copy16 > 0) {  // phase B: the staged bytes, then the rest from global memory
      asm volatile("cp.async.wait_all;\n" ::: "memory");
      __syncthreads();
      for (size_t i = threadIdx.x; i < copy16; i += threads) acc += stage[i].x ^ stage[i].w;
    }
    const uint4* rest = task + copy16;
    const size_t m = task16 - (owner && a.shape.owners_short ? a.shape.copy_bytes / 16 : copy16);
    for (size_t base = threadIdx.x; base < m; base += 4 * threads) {
      uint4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const size_t i = base + u * threads;
        v[u] = i < m ? __ldg(rest + i) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) acc += v[u].x ^ v[u].w;
    }
    __syncthreads();  // no block reuses `stage` for the next round's copies before all have read it
    grid.sync();
  }
  if (b == 0 && threadIdx.x == 0) {
    a.clocks[2] = clock64();
    a.clocks[3] = GlobalNs();
  }
  a.sink[b * threads + threadIdx.x] = acc ^ idx;
}

}  // namespace

std::string IdleCopyRounds(const void* data, size_t bytes, int blocks, const IdleCopyShape& shape, float* ms,
                           IdleCopyResult* result) {
  if (shape.rounds < 1) return "idle copy: rounds " + std::to_string(shape.rounds) + ": give at least 1";
  if (shape.owners < 0 || shape.owners > blocks) {
    return "idle copy: owners " + std::to_string(shape.owners) + ": give 0.." + std::to_string(blocks);
  }
  if (shape.chain < 1) return "idle copy: chain " + std::to_string(shape.chain) + ": give at least 1";
  if (shape.task_bytes == 0 || shape.task_bytes % 16 != 0 || shape.copy_bytes % 16 != 0 ||
      shape.copy_bytes > shape.task_bytes || shape.task_bytes > bytes) {
    return "idle copy: task_bytes " + std::to_string(shape.task_bytes) + ", copy_bytes " +
           std::to_string(shape.copy_bytes) + ": give multiples of 16 with 0 < task_bytes <= the buffer's " +
           std::to_string(bytes) + " and copy_bytes <= task_bytes";
  }
  const void* kernel = reinterpret_cast<const void*>(IdleCopyKernel);
  int sms = 0, optin = 0, per_sm = 0;
  const std::string attr_err =
      DeviceAttributes({{cudaDevAttrMultiProcessorCount, &sms}, {cudaDevAttrMaxSharedMemoryPerBlockOptin, &optin}});
  if (!attr_err.empty()) return attr_err;
  if (shape.copy_bytes > static_cast<uint32_t>(optin)) {
    return "idle copy: copy_bytes " + std::to_string(shape.copy_bytes) + " is over the " + std::to_string(optin) +
           " bytes of shared memory a block can have here";
  }
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(shape.copy_bytes));
  if (err != cudaSuccess) return std::string("cudaFuncSetAttribute (idle copy): ") + cudaGetErrorString(err);
  err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kIdleCopyThreads, shape.copy_bytes);
  if (err != cudaSuccess) return std::string("idle copy occupancy: ") + cudaGetErrorString(err);
  if (blocks < 1 || blocks > sms * per_sm) {
    return "idle copy: " + std::to_string(blocks) + " blocks with " + std::to_string(shape.copy_bytes) +
           " bytes of shared memory: a cooperative launch holds 1.." + std::to_string(sms * per_sm) + " on this GPU";
  }
  uint32_t* table = nullptr;
  unsigned long long* chain_clk = nullptr;
  unsigned long long* clocks = nullptr;
  uint32_t* sink = nullptr;
  std::string fail;
  const FirstError check(&fail);
  std::vector<uint32_t> host_table(kIdleCopyTable);
  for (uint32_t i = 0; i < kIdleCopyTable; ++i) host_table[i] = (i * 7 + 1) % kIdleCopyTable;  // one cycle
  if (check(cudaMalloc(&table, kIdleCopyTable * sizeof(uint32_t)), "cudaMalloc (idle copy table)") &&
      check(cudaMalloc(&chain_clk, static_cast<size_t>(shape.rounds) * sizeof(unsigned long long)),
            "cudaMalloc (idle copy chain)") &&
      check(cudaMalloc(&clocks, 4 * sizeof(unsigned long long)), "cudaMalloc (idle copy clocks)") &&
      check(cudaMalloc(&sink, static_cast<size_t>(blocks) * kIdleCopyThreads * sizeof(uint32_t)),
            "cudaMalloc (idle copy sink)") &&
      check(cudaMemcpy(table, host_table.data(), kIdleCopyTable * sizeof(uint32_t), cudaMemcpyHostToDevice),
            "cudaMemcpy (idle copy table)") &&
      check(cudaMemset(chain_clk, 0, static_cast<size_t>(shape.rounds) * sizeof(unsigned long long)),
            "cudaMemset (idle copy chain)")) {
    IdleCopyArgs args{static_cast<const uint4*>(data), bytes, shape, table, chain_clk, clocks, sink};
    void* params[] = {&args};
    std::string launch_err;
    const std::string timed = Timed("idle copy rounds", [&] {
      const cudaError_t e = cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3(kIdleCopyThreads), params,
                                                        shape.copy_bytes, nullptr);
      if (e != cudaSuccess) launch_err = std::string("cudaLaunchCooperativeKernel (idle copy): ") + cudaGetErrorString(e);
    }, ms);
    fail = !launch_err.empty() ? launch_err : timed;
  }
  if (fail.empty()) {
    std::vector<unsigned long long> host_chain(shape.rounds), host_clocks(4);
    if (check(cudaMemcpy(host_chain.data(), chain_clk, host_chain.size() * sizeof(unsigned long long),
                         cudaMemcpyDeviceToHost), "cudaMemcpy (idle copy chain)") &&
        check(cudaMemcpy(host_clocks.data(), clocks, 4 * sizeof(unsigned long long), cudaMemcpyDeviceToHost),
              "cudaMemcpy (idle copy clocks)")) {
      const double mhz = ClockMhz(host_clocks[0], host_clocks[2], host_clocks[1], host_clocks[3]);
      if (mhz <= 0) {
        fail = "idle copy: block 0's clock rate could not be measured";
      } else {
        std::vector<float> us;
        for (int r = shape.rounds / 10; r < shape.rounds; ++r) us.push_back(static_cast<float>(host_chain[r] / mhz));
        result->chain_us_median = shape.owners > 0 ? Quantile(us, 0.5) : 0.0f;
        result->sm_mhz = static_cast<float>(mhz);
      }
    }
  }
  cudaFree(table);
  cudaFree(chain_clk);
  cudaFree(clocks);
  cudaFree(sink);
  return fail;
}

namespace {

// ClusterRoundsKernel<kind>, or nullptr for a kind it is not built for.
const void* ClusterKernel(ClusterKind kind) {
  switch (kind) {
    case kClusterHardware: return reinterpret_cast<const void*>(ClusterRoundsKernel<kClusterHardware>);
    case kClusterMbarrier: return reinterpret_cast<const void*>(ClusterRoundsKernel<kClusterMbarrier>);
    case kGroupCounter: return reinterpret_cast<const void*>(ClusterRoundsKernel<kGroupCounter>);
    case kGridCounter: return reinterpret_cast<const void*>(ClusterRoundsKernel<kGridCounter>);
    case kHierarchicalGrid: return reinterpret_cast<const void*>(ClusterRoundsKernel<kHierarchicalGrid>);
    case kRemoteSmemChase: return reinterpret_cast<const void*>(ClusterRoundsKernel<kRemoteSmemChase>);
    case kL2Chase: return reinterpret_cast<const void*>(ClusterRoundsKernel<kL2Chase>);
    case kClusterHardwareLoads: return reinterpret_cast<const void*>(ClusterRoundsKernel<kClusterHardwareLoads>);
    case kClusterRelaxedLoads: return reinterpret_cast<const void*>(ClusterRoundsKernel<kClusterRelaxedLoads>);
    case kGridCounterLoads: return reinterpret_cast<const void*>(ClusterRoundsKernel<kGridCounterLoads>);
    case kLoadsOnly: return reinterpret_cast<const void*>(ClusterRoundsKernel<kLoadsOnly>);
    case kStAsyncHandoff: return reinterpret_cast<const void*>(ClusterRoundsKernel<kStAsyncHandoff>);
    case kGridSplitLoads: return reinterpret_cast<const void*>(ClusterRoundsKernel<kGridSplitLoads>);
    default: return nullptr;
  }
}

// "" when this GPU has thread-block clusters (compute capability 9.0 or above) and
// `cluster_size` is 1..16; otherwise what is wrong. Sizes above 8 are allowed on `kernel`.
std::string ClusterSupport(const void* kernel, int cluster_size) {
  int major = 0;
  const std::string attr_err = DeviceAttributes({{cudaDevAttrComputeCapabilityMajor, &major}});
  if (!attr_err.empty()) return attr_err;
  if (major < 9) {
    return "thread-block clusters need compute capability 9.0 or above (sm_90); this GPU is " + std::to_string(major) +
           ".x";
  }
  if (cluster_size < 1 || cluster_size > 16) {
    return "cluster size " + std::to_string(cluster_size) + ": give 1..16 (above 8 is the non-portable size)";
  }
  if (cluster_size > 8) {
    const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (err != cudaSuccess) return std::string("cudaFuncSetAttribute (non-portable cluster size): ") + cudaGetErrorString(err);
  }
  return "";
}

// The launch configuration of `blocks` x kClusterThreads of `kernel` in clusters of
// `cluster_size` (attrs[0]) and, if `cooperative`, the cooperative attribute (attrs[1]); each
// block asks for more than half the opt-in shared memory (unused), so that no SM holds two
// blocks (LoadedBarrier's rule: one block per SM, as the worker). "" or the CUDA error.
std::string ClusterConfig(const void* kernel, int blocks, int cluster_size, bool cooperative, cudaLaunchAttribute* attrs,
                          cudaLaunchConfig_t* config) {
  int optin = 0;
  const std::string attr_err = DeviceAttributes({{cudaDevAttrMaxSharedMemoryPerBlockOptin, &optin}});
  if (!attr_err.empty()) return attr_err;
  const int dynamic_bytes = optin / 2 + 1024;
  const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic_bytes);
  if (err != cudaSuccess) return std::string("cudaFuncSetAttribute (shared memory): ") + cudaGetErrorString(err);
  *config = {};
  config->gridDim = dim3(blocks);
  config->blockDim = dim3(kClusterThreads);
  config->dynamicSmemBytes = static_cast<size_t>(dynamic_bytes);
  attrs[0].id = cudaLaunchAttributeClusterDimension;
  attrs[0].val.clusterDim.x = static_cast<unsigned>(cluster_size);
  attrs[0].val.clusterDim.y = 1;
  attrs[0].val.clusterDim.z = 1;
  attrs[1].id = cudaLaunchAttributeCooperative;
  attrs[1].val.cooperative = 1;
  config->attrs = attrs;
  config->numAttrs = cooperative ? 2 : 1;
  return "";
}

// MaxActiveClusters for `kernel`.
std::string ClustersResident(const void* kernel, int cluster_size, int* clusters) {
  const std::string support = ClusterSupport(kernel, cluster_size);
  if (!support.empty()) return support;
  cudaLaunchAttribute attrs[2];
  cudaLaunchConfig_t config;
  const std::string config_err = ClusterConfig(kernel, cluster_size, cluster_size, false, attrs, &config);
  if (!config_err.empty()) return config_err;
  const cudaError_t err = cudaOccupancyMaxActiveClusters(clusters, kernel, &config);
  return err == cudaSuccess ? "" : std::string("cudaOccupancyMaxActiveClusters: ") + cudaGetErrorString(err);
}

}  // namespace

std::string MaxActiveClusters(int cluster_size, int* clusters) {
  return ClustersResident(ClusterKernel(kClusterMbarrier), cluster_size, clusters);
}

std::string ClusterRounds(const void* data, size_t bytes, int blocks, int cluster_size, ClusterKind kind, bool stream,
                          bool cooperative, int iterations, ClusterRoundsResult* result) {
  const void* kernel = ClusterKernel(kind);
  if (kernel == nullptr) {
    return "cluster kind " + std::to_string(static_cast<int>(kind)) +
           ": give kClusterHardware, kClusterMbarrier, kGroupCounter, kGridCounter, kHierarchicalGrid, "
           "kRemoteSmemChase, kL2Chase, kClusterHardwareLoads, kClusterRelaxedLoads, kGridCounterLoads, kLoadsOnly, "
           "kStAsyncHandoff or kGridSplitLoads";
  }
  if (iterations < 1 || static_cast<uint64_t>(iterations) * static_cast<uint64_t>(std::max(blocks, 1)) > UINT32_MAX) {
    return "iterations " + std::to_string(iterations) + ": give 1.." +
           std::to_string(UINT32_MAX / static_cast<uint64_t>(std::max(blocks, 1))) +
           " (the counters' targets, rounds x blocks, are 32-bit)";
  }
  const bool across = LoadsAcrossBarrier(kind);
  if (stream && kind == kClusterHardware) {
    return "stream with kClusterHardware: its barrier needs every thread, so none can stream; give stream false "
           "(kClusterHardwareLoads is that barrier with loads in flight)";
  }
  if (kind == kStAsyncHandoff && cluster_size < 2) {
    return "kStAsyncHandoff with clusters of " + std::to_string(cluster_size) +
           " block: st.async stores into another block of the cluster; give clusters of 2 or more";
  }
  if (!stream && across) {
    return "cluster kind " + std::to_string(static_cast<int>(kind)) +
           ": every thread's loads across the barrier are its stream; give stream true";
  }
  int resident = 0;
  const std::string occupancy = ClustersResident(kernel, cluster_size, &resident);
  if (!occupancy.empty()) return occupancy;
  if (blocks < cluster_size || blocks % cluster_size != 0 || blocks > resident * cluster_size) {
    return std::to_string(blocks) + " blocks in clusters of " + std::to_string(cluster_size) +
           ": give a multiple of the cluster size, at most " + std::to_string(resident * cluster_size) +
           " (the clusters that can be resident at once on this GPU)";
  }
  const size_t step = static_cast<size_t>(across ? kClusterThreads : kClusterSyncWarp * 32) * kClusterStreamUnroll * 16;
  const size_t per_block = stream ? bytes / static_cast<size_t>(blocks) / step * step : 0;
  if (stream && (data == nullptr || per_block == 0)) {
    return "stream: give a buffer of at least " + std::to_string(step * static_cast<size_t>(blocks)) + " bytes for " +
           std::to_string(blocks) + " blocks (got " + std::to_string(data == nullptr ? 0 : bytes) + ")";
  }
  const uint32_t groups = static_cast<uint32_t>(blocks / cluster_size);
  const size_t slots_at = 64 + 32 * static_cast<size_t>(groups);
  const size_t chain_at = (slots_at + 2 * static_cast<size_t>(blocks) + 31) / 32 * 32;
  const size_t words = chain_at + kClusterChainWords;
  std::vector<uint32_t> chain(kClusterChainWords);
  for (uint32_t j = 0; j < kClusterChainWords; ++j) chain[j] = (j + kClusterChainStep) % kClusterChainWords;
  uint32_t* scratch = nullptr;
  unsigned long long* streamed = nullptr;
  uint32_t* sink = nullptr;
  std::string fail;
  const FirstError check(&fail);
  if (check(cudaMalloc(&scratch, words * sizeof(uint32_t)), "cudaMalloc (cluster scratch)") &&
      check(cudaMalloc(&streamed, sizeof(unsigned long long)), "cudaMalloc (streamed)") &&
      check(cudaMalloc(&sink, static_cast<size_t>(blocks) * sizeof(uint32_t)), "cudaMalloc (sink)") &&
      check(cudaMemset(scratch, 0, chain_at * sizeof(uint32_t)), "cudaMemset (cluster scratch)") &&
      check(cudaMemcpy(scratch + chain_at, chain.data(), kClusterChainWords * sizeof(uint32_t), cudaMemcpyHostToDevice),
            "cudaMemcpy (chain)") &&
      check(cudaMemset(streamed, 0, sizeof(unsigned long long)), "cudaMemset (streamed)")) {
    ClusterArgs args{static_cast<const uint8_t*>(data), per_block, iterations, groups, scratch, scratch + chain_at,
                     streamed, sink};
    void* params[] = {&args};
    cudaLaunchAttribute attrs[2];
    cudaLaunchConfig_t config;
    fail = ClusterConfig(kernel, blocks, cluster_size, cooperative, attrs, &config);
    const std::string timed = fail.empty() ? Timed("cluster rounds", [&] {
      check(cudaLaunchKernelExC(&config, kernel, params), "cudaLaunchKernelExC");
    }, &result->ms) : "";
    if (fail.empty()) fail = timed;
    if (fail.empty() &&
        check(cudaMemcpy(&result->mismatches, scratch + 32, sizeof(uint32_t), cudaMemcpyDeviceToHost), "cudaMemcpy")) {
      check(cudaMemcpy(&result->streamed_bytes, streamed, sizeof(unsigned long long), cudaMemcpyDeviceToHost),
            "cudaMemcpy");
    }
  }
  cudaFree(scratch);
  cudaFree(streamed);
  cudaFree(sink);
  return fail;
}

}  // namespace tileinfer
