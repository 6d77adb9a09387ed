// The floor's denominator: how fast this GPU streams a buffer the size of the model.
// Each block reads its contiguous share with 16-byte loads, kUnroll in flight per thread,
// and folds the words into one XOR so that nothing is optimised away.
#include "cuda/stream_read.h"

#include <cooperative_groups.h>
#include <cuda_runtime.h>

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
  auto bar = [&](int s) { return static_cast<uint32_t>(__cvta_generic_to_shared(&full[s])); };
  auto issue = [&](size_t k) {  // thread 0 only
    const int s = static_cast<int>(k % stages);
    const size_t off = begin + k * chunk;
    const uint32_t size = static_cast<uint32_t>(min(static_cast<size_t>(chunk), end - off));
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(ring + static_cast<size_t>(s) * chunk));
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar(s)), "r"(size) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(data + off), "r"(size), "r"(bar(s))
                 : "memory");
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar(s)) : "memory");
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

// GridBarrier's kernel (stream_read.h). scratch: [0] counter, [1] mismatches, then two
// rounds of one slot per block (round i % 2 is rewritten only after barrier i + 1, which
// every reader of round i has passed).
template <BarrierKind kKind>
__global__ void GridBarrierKernel(int iterations, uint32_t* scratch) {
  const uint32_t n = gridDim.x;
  uint32_t* slots = scratch + 2;
  for (int i = 0; i < iterations; ++i) {
    uint32_t* round = slots + (i & 1) * n;
    const uint32_t stamp = static_cast<uint32_t>(i) + 1;
    if (threadIdx.x == 32) round[blockIdx.x] = stamp;  // not the arriving warp's write
    if (kKind == kGridSync) {
      cooperative_groups::this_grid().sync();
    } else if (kKind == kCounterBarrier) {
      device::CounterBarrier</*kAcquirePoll=*/true>(scratch, stamp * n);
    } else {
      device::CounterBarrier</*kAcquirePoll=*/false>(scratch, stamp * n);
    }
    if (threadIdx.x == 0 && *static_cast<volatile uint32_t*>(round + (blockIdx.x + 1) % n) != stamp) {
      atomicAdd(scratch + 1, 1u);
    }
  }
}

}  // namespace

std::string StreamRead(const void* data, size_t bytes, int blocks, int threads, uint32_t* sink, float* ms) {
  return Timed("stream read", [&] {
    StreamReadKernel<<<blocks, threads>>>(static_cast<const uint4*>(data), bytes / 16, sink);
  }, ms);
}

std::string StreamReadBulk(const void* data, size_t bytes, int blocks, int threads, uint32_t chunk, int stages,
                           uint32_t* sink, float* ms) {
  int device = 0, major = 0, optin = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err != cudaSuccess) return std::string("cudaDeviceGetAttribute: ") + cudaGetErrorString(err);
  if (major < 9) return "bulk copies need sm_90 or later; this GPU is sm_" + std::to_string(major) + "x";
  const size_t ring = static_cast<size_t>(stages) * chunk;
  if (chunk == 0 || chunk % 16 != 0 || stages < 1 || stages > kMaxBulkStages || ring > static_cast<size_t>(optin)) {
    return "bulk ring of " + std::to_string(stages) + " x " + std::to_string(chunk) +
           " bytes: chunk must be a positive multiple of 16, stages 1.." + std::to_string(kMaxBulkStages) +
           ", and the ring at most " + std::to_string(optin) + " bytes of shared memory";
  }
  err = cudaFuncSetAttribute(StreamReadBulkKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(ring));
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

// GridBarrierKernel<kind>, or nullptr for a kind it is not built for.
const void* BarrierKernel(BarrierKind kind) {
  switch (kind) {
    case kGridSync: return reinterpret_cast<const void*>(GridBarrierKernel<kGridSync>);
    case kCounterBarrier: return reinterpret_cast<const void*>(GridBarrierKernel<kCounterBarrier>);
    case kCounterRelaxedPoll: return reinterpret_cast<const void*>(GridBarrierKernel<kCounterRelaxedPoll>);
    default: return nullptr;
  }
}

std::string GridBarrier(int blocks, int threads, BarrierKind kind, int iterations, uint32_t* scratch, float* ms,
                        uint32_t* mismatches) {
  const void* kernel = BarrierKernel(kind);
  if (kernel == nullptr) {
    return "barrier kind " + std::to_string(static_cast<int>(kind)) +
           ": give kGridSync, kCounterBarrier or kCounterRelaxedPoll";
  }
  if (iterations < 1) return "iterations " + std::to_string(iterations) + ": give at least 1";
  if (threads < 64 || threads % 32 != 0) {
    return "threads " + std::to_string(threads) +
           ": give a multiple of 32, at least 64 (warp 1 writes the check's slot)";
  }
  int device = 0, sms = 0, per_sm = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess) err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0);
  if (err != cudaSuccess) return std::string("barrier occupancy: ") + cudaGetErrorString(err);
  if (blocks < 1 || blocks > sms * per_sm) {
    return std::to_string(blocks) + " blocks of " + std::to_string(threads) + " threads: a cooperative launch holds 1.." +
           std::to_string(sms * per_sm) + " on this GPU";
  }
  err = cudaMemset(scratch, 0, (2 + 2 * static_cast<size_t>(blocks)) * sizeof(uint32_t));
  if (err != cudaSuccess) return std::string("cudaMemset (barrier scratch): ") + cudaGetErrorString(err);
  void* args[] = {&iterations, &scratch};
  std::string launch_err;
  const std::string timed = Timed("grid barrier", [&] {
    const cudaError_t e = cudaLaunchCooperativeKernel(kernel, dim3(blocks), dim3(threads), args, 0, nullptr);
    if (e != cudaSuccess) launch_err = std::string("cudaLaunchCooperativeKernel: ") + cudaGetErrorString(e);
  }, ms);
  if (!launch_err.empty()) return launch_err;
  if (!timed.empty()) return timed;
  err = cudaMemcpy(mismatches, scratch + 1, sizeof(uint32_t), cudaMemcpyDeviceToHost);
  return err == cudaSuccess ? "" : std::string("cudaMemcpy (mismatches): ") + cudaGetErrorString(err);
}

}  // namespace tileinfer
