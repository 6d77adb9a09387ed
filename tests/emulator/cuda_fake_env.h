// Fake CUDA device environment: one kThreads-thread block emulated by fibers (emu_core.h), shared by
// the three emulators. Included in place of <cuda_bf16.h> by the real cuda/common.cuh (the setup
// scripts write that copy into fake*/cuda/common.cuh).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
// inline: the header is compiled into two TUs of an emulator (the op and its driver)
#define __noinline__ inline __attribute__((noinline))
// static shared memory (BlockSum's scratch, LM_HEAD's s_value/s_id/s_finite) in a section the checker watches
#define __shared__ static __attribute__((section("emu_shared")))
// a vector member, so that copies stay one 16-byte access (GCC splits a plain 4 x u32 struct copy)
typedef unsigned int EmuV4u __attribute__((vector_size(16)));
struct alignas(16) uint4 { union { struct { unsigned int x, y, z, w; }; EmuV4u v_; }; };
// EMU256: float4 / uint2 (RmsNormToShared's vector path since v10)
typedef float EmuV4f __attribute__((vector_size(16)));
struct alignas(16) float4 { union { struct { float x, y, z, w; }; EmuV4f v_; }; };
inline float4 make_float4(float a, float b, float c, float d) { float4 r; r.x = a; r.y = b; r.z = c; r.w = d; return r; }
// EMU512: float2 / make_float2 (WarpDot2Bf16 of exp/pair-ffn, exp/pair-rows)
struct alignas(8) float2 { float x, y; };
inline float2 make_float2(float a, float b) { float2 r; r.x = a; r.y = b; return r; }
struct alignas(8) uint2 { unsigned int x, y; };
inline uint2 make_uint2(unsigned a, unsigned b) { uint2 r; r.x = a; r.y = b; return r; }
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { uint4 r; r.x = a; r.y = b; r.z = c; r.w = d; return r; }
struct EmuTid { unsigned int x, y, z; };
namespace emu {
extern EmuTid g_tid[];
extern int g_cur;
void SyncImpl(int line);
void SyncWarpImpl(int line, unsigned mask = 0xffffffffu);
float ShflImpl(unsigned mask, float v, int off, int line, bool idx = false);
}  // namespace emu
#define threadIdx (::emu::g_tid[::emu::g_cur])
#define __syncthreads() ::emu::SyncImpl(__LINE__)
#define __syncwarp(...) ::emu::SyncWarpImpl(__LINE__, ##__VA_ARGS__)
#define __shfl_xor_sync(m, v, o) ::emu::ShflImpl(m, v, o, __LINE__)
#define __shfl_sync(m, v, src) ::emu::ShflImpl(m, v, src, __LINE__, true)
inline float __uint_as_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
struct __nv_bfloat16 { uint16_t x; };
inline __nv_bfloat16 __float2bfloat16_rn(float f) {  // round to nearest even, NaN -> quiet NaN
  uint32_t u; std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return __nv_bfloat16{uint16_t((u >> 16) | 0x40)};
  u += 0x7FFF + ((u >> 16) & 1);
  return __nv_bfloat16{uint16_t(u >> 16)};
}
inline uint16_t __bfloat16_as_ushort(__nv_bfloat16 b) { return b.x; }
template <typename T> inline T __ldg(const T* p) { return *p; }
template <typename T> inline T __ldcg(const T* p) { return *p; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
using std::isfinite;
// Package format 2 (v48): the FIXED64 residual's conversions (Fix, Real, Load4) and the count of
// values out of its range. Fibers switch only inside the emulated synchronisation calls, so the
// plain read-modify-write is atomic among the block's threads.
struct alignas(16) longlong2 { long long x, y; };
inline long long __float2ll_rn(float v) { return llrintf(v); }  // the default mode: nearest, ties to even
inline float __ll2float_rn(long long q) { return static_cast<float>(q); }  // nearest, as the default mode
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  *p = old + v;
  return old;
}
