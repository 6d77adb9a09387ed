// Per-SM streaming time when every SM streams at once: is it a property of the SM, or of the
// addresses? Each block's slice is contiguous, or (strided) 4 KB chunks spread over the buffer.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
// strided: the slice is 4 KB chunks b, b + n, b + 2n, ... (n blocks) instead of one contiguous range.
__device__ __forceinline__ size_t Unit(size_t u, int b, int n, size_t slice16, bool strided) {
  if (!strided) return (size_t)b * slice16 + u;
  const size_t chunk = u >> 8, within = u & 255;  // 256 x 16 B = 4 KB
  return ((size_t)b + (size_t)n * chunk) * 256 + within;
}
__global__ void __launch_bounds__(512, 1) Stream(const uint4* data, size_t slice16, int rot, int strided, uint32_t* sink,
                                                 unsigned long long* t, uint32_t* sm) {
  extern __shared__ float pad[];
  const int b = (blockIdx.x + rot) % gridDim.x;
  const int n = gridDim.x;
  const uint4* p = data;
  uint32_t acc = 0;
  __syncthreads();
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (size_t i = threadIdx.x; i < slice16; i += 512 * 4) {
    uint4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      size_t j = i + k * 512;
      if (j < slice16) asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v[k].x), "=r"(v[k].y), "=r"(v[k].z), "=r"(v[k].w) : "l"(p + Unit(j, b, n, slice16, strided)));
      else v[k] = make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
  }
  __syncthreads();
  unsigned long long t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  if (acc == 0x12345678u) sink[0] = acc;
  if (threadIdx.x == 0) {
    t[blockIdx.x] = t1 - t0;
    uint32_t s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    sm[blockIdx.x] = s;
  }
}
int main(int argc, char** argv) {
  int dev = 0; cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, dev));
  const int n = prop.multiProcessorCount;
  const size_t slices[] = {96 << 10, 1 << 20, 4 << 20};
  size_t maxb = (size_t)n * (4 << 20);
  uint4* d; CK(cudaMalloc(&d, maxb)); CK(cudaMemset(d, 1, maxb));
  uint32_t *sink, *sm; unsigned long long* t;
  CK(cudaMalloc(&sink, 4)); CK(cudaMalloc(&sm, 4 * n)); CK(cudaMalloc(&t, 8 * n));
  const int shmem = 150 << 10;
  CK(cudaFuncSetAttribute(Stream, cudaFuncAttributeMaxDynamicSharedMemorySize, shmem));
  std::vector<unsigned long long> ht(n); std::vector<uint32_t> hs(n);
  for (int strided = 0; strided < 2; ++strided)
  for (size_t sl : slices) {
    for (int it = 0; it < 40; ++it) {
      int rot = it % 4 == 0 ? 0 : (it * 37) % n;
      const uint4* dd = d;
      size_t s16 = sl / 16;
      void* args[] = {(void*)&dd, &s16, &rot, &strided, &sink, &t, &sm};
      CK(cudaLaunchCooperativeKernel((void*)Stream, n, 512, args, shmem, 0));
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(ht.data(), t, 8 * n, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hs.data(), sm, 4 * n, cudaMemcpyDeviceToHost));
      for (int b = 0; b < n; ++b) printf("%zu %d %d %d %u %llu %d\n", sl, it, rot, b, hs[b], ht[b], strided);
    }
  }
  return 0;
}
