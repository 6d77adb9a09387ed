// The floor's denominator: how fast this GPU streams a buffer the size of the model.
// Each block reads its contiguous share with 16-byte loads, kUnroll in flight per thread,
// and folds the words into one XOR so that nothing is optimised away.
#include "cuda/stream_read.h"

#include <cuda_runtime.h>

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

}  // namespace

std::string StreamRead(const void* data, size_t bytes, int blocks, int threads, uint32_t* sink, float* ms) {
  cudaEvent_t start, stop;
  cudaError_t err = cudaEventCreate(&start);
  if (err == cudaSuccess) err = cudaEventCreate(&stop);
  if (err != cudaSuccess) return std::string("cudaEventCreate: ") + cudaGetErrorString(err);
  cudaEventRecord(start);
  StreamReadKernel<<<blocks, threads>>>(static_cast<const uint4*>(data), bytes / 16, sink);
  err = cudaGetLastError();
  cudaEventRecord(stop);
  if (err == cudaSuccess) err = cudaEventSynchronize(stop);
  if (err == cudaSuccess) err = cudaEventElapsedTime(ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return err == cudaSuccess ? "" : std::string("stream read: ") + cudaGetErrorString(err);
}

}  // namespace tileinfer
