// FFN: rows [a, b) of the SwiGLU MLP, fused with the matching columns of the down projection.
//   u = rmsnorm(x1) * g_ffn                         x1: (H,) f32
//   h_j = silu(Wg[j] . u) * (Wu[j] . u)             Wg, Wu: (F, H) bf16, j in [a, b)
//   x0[i] += fix(sum_{j=a}^{b-1} h_j * WdT[j, i])   WdT = Wdown^T: (F, H) bf16, i in [0, H)
// No barrier between the up and down projections. The part goes into the FIXED64 residual
// x0 by 64-bit integer adds (red.add.u64), whose sum does not depend on their order: no
// reduction wave. The part is staged in shared memory first so that consecutive threads add
// to consecutive words: a warp's 32 adds then fall in 8 sectors of 32 bytes, where adding
// each thread's 8 consecutive outputs directly would touch 32 (4x the L2 atomic operations;
// docs/PERFORMANCE.md, calls RD3 and RD4: +4.9% against -3.4% on the 1B).
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

// acc[0..7] += h * (8 BF16 values in v)
__device__ __forceinline__ void Axpy8(float* acc, float h, const uint4 v) {
  acc[0] += h * Bf16Lo(v.x);
  acc[1] += h * Bf16Hi(v.x);
  acc[2] += h * Bf16Lo(v.y);
  acc[3] += h * Bf16Hi(v.y);
  acc[4] += h * Bf16Lo(v.z);
  acc[5] += h * Bf16Hi(v.z);
  acc[6] += h * Bf16Lo(v.w);
  acc[7] += h * Bf16Hi(v.w);
}

// part[i] = sum_{j=a}^{b-1} h[j - a] * WdT[j, i] element by element, i in [0, H): the down
// projection when H is not a multiple of 8 (tiny test models); and out of line, for the
// narrow kernel (common.cuh, above WarpDotBf16Scalar).
__device__ __forceinline__ void FfnDownScalar(const uint16_t* wd, const float* hbuf, int a, int b, int H, float* part) {
  for (int i = threadIdx.x; i < H; i += kThreads) {
    float acc = 0;
    for (int j = a; j < b; ++j) acc += hbuf[j - a] * Bf16(__ldg(wd + static_cast<size_t>(j) * H + i));
    part[i] = acc;
  }
}
__device__ __noinline__ void FfnDownScalarCold(const uint16_t* wd, const float* hbuf, int a, int b, int H, float* part) {
  FfnDownScalar(wd, hbuf, a, b, H, part);
}

template <bool kWide = false>
__device__ __forceinline__ void OpFfn(const format::TaskRecord& t, const StepContext& c) {
  const int H = c.p.hidden;
  float* xn = c.smem;
  float* hbuf = c.smem + H;
  RmsNormToShared<kWide>(c.F32(t.in_buf), c.Bf16Tensor(t.norm), H, c.p.rms_norm_eps, xn, c.scratch);
  PhaseMark(c, 0);
  const uint16_t* wg = c.Bf16Tensor(t.weight);
  const uint16_t* wu = c.Bf16Tensor(t.weight2);
  const uint16_t* wd = c.Bf16Tensor(t.weight3);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int a = static_cast<int>(t.row_begin), b = static_cast<int>(t.row_end);
  for (int j = a + warp; j < b; j += kWarps) {
    // Gate and up rows together (WarpDot2Bf16).
    const float2 gu = WarpDot2Bf16<kWide>(wg + static_cast<size_t>(j) * H, wu + static_cast<size_t>(j) * H, xn, H);
    const float g = gu.x, u = gu.y;
    if (lane == 0) hbuf[j - a] = g / (1.0f + expf(-g)) * u;
  }
  __syncthreads();
  PhaseMark(c, 1);
  float* part = xn;  // the part, staged: xn is free once gate/up are done (the barrier above)
  if ((H & 7) == 0) {
    // Rows of WdT loaded before they are used: 12 x 16 bytes a thread, 48 KB a SM in flight
    // for the 1B. 16 was slower (as in WarpDotBf16's kDotUnroll: docs/PERFORMANCE.md, v45);
    // 12 against 8 is level on the 1B and -1.2 to -2.0% on SmolLM2, whose tasks hold 11-12
    // rows and so take one batch of loads instead of two (v46, calls DS and R12B).
    constexpr int kRows = 12;
    for (int i8 = threadIdx.x; i8 < H / 8; i8 += kThreads) {
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      // Row j's 16 bytes for this thread (read-only path, evict-first in L2).
      auto load = [&](int j) { return LoadWeight8(reinterpret_cast<const uint4*>(wd + static_cast<size_t>(j) * H) + i8); };
      int j = a;
      for (; j + kRows <= b; j += kRows) {
        uint4 v[kRows];
#pragma unroll
        for (int u = 0; u < kRows; ++u) v[u] = load(j + u);
#pragma unroll
        for (int u = 0; u < kRows; ++u) Axpy8(acc, hbuf[j - a + u], v[u]);
      }
      if (j < b) {  // the last b - j < kRows rows: loaded together too, one round trip, not one a row
        uint4 v[kRows];
#pragma unroll
        for (int u = 0; u < kRows; ++u) v[u] = j + u < b ? load(j + u) : make_uint4(0, 0, 0, 0);
        // The guard on the add, not the zero fill, keeps the sum bit-equal to one row at a time
        // (no +0 terms) and hbuf's reads inside the task's rows.
#pragma unroll
        for (int u = 0; u < kRows; ++u) {
          if (j + u < b) Axpy8(acc, hbuf[j - a + u], v[u]);
        }
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) part[i8 * 8 + k] = acc[k];
    }
  } else if constexpr (kWide) {
    FfnDownScalar(wd, hbuf, a, b, H, part);
  } else {
    FfnDownScalarCold(wd, hbuf, a, b, H, part);
  }
  __syncthreads();
  unsigned long long* x0 = reinterpret_cast<unsigned long long*>(c.Fixed(t.out_buf));
  for (int i = threadIdx.x; i < H; i += kThreads) RedAddU64(x0 + i, Fix(part[i], c.p.residual_invalid));
  __syncthreads();  // part (xn's space) is reused by this block's next task
}

}  // namespace device
}  // namespace tileinfer
