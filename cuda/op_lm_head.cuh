// LM_HEAD: logits[r] = W[r] . rmsnorm(real(x0))   W: (V, H) bf16, r in [row_begin, row_end)
//   cand[slot] = (max logit of the rows, lowest id among ties); a non-finite logit, or a
//   residual that went out of fix()'s range this request (WorkerParams::residual_invalid),
//   makes the slot's id kCandidateNonFinite so that selection stops the request.
#pragma once
#include "cuda/common.cuh"

namespace tileinfer {
namespace device {

template <bool kWide = false>
__device__ __forceinline__ void OpLmHead(const format::TaskRecord& t, const StepContext& c) {
  const int H = c.p.hidden;
  float* xn = c.smem;
  RmsNormToShared<kWide>(c.Fixed(t.in_buf), c.Bf16Tensor(t.norm), H, c.p.rms_norm_eps, xn, c.scratch);
  PhaseMark(c, 0);
  float* logits = c.F32(t.out_buf);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float best = -INFINITY;
  int best_id = -1;
  bool finite = true;
  WarpRowsGemv<kWide>(t, c, c.Bf16Tensor(t.weight), xn, H, [&](uint32_t r, float y) {
    if (lane == 0) logits[r] = y;
    finite &= isfinite(y);
    if (best_id < 0 || y > best) {  // rows ascend within a warp: strict > keeps the lowest id
      best = y;
      best_id = static_cast<int>(r);
    }
  });
  // Per-warp bests -> one candidate, warps in order, ties to the lowest id.
  __shared__ float s_value[kWarps];
  __shared__ int s_id[kWarps];
  __shared__ int s_finite[kWarps];
  if (lane == 0) {
    s_value[warp] = best;
    s_id[warp] = best_id;
    s_finite[warp] = finite;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    Candidate cand{-INFINITY, -1};
    bool all_finite = true;
    for (int wi = 0; wi < kWarps; ++wi) {
      all_finite &= s_finite[wi] != 0;
      if (s_id[wi] < 0) continue;
      if (cand.id < 0 || s_value[wi] > cand.value || (s_value[wi] == cand.value && s_id[wi] < cand.id)) {
        cand = Candidate{s_value[wi], s_id[wi]};
      }
    }
    // The status word's adds came in earlier waves, before barriers: a plain load sees them.
    if (!all_finite || *static_cast<volatile unsigned long long*>(c.p.residual_invalid) != 0) {
      cand = Candidate{NAN, format::kCandidateNonFinite};
    }
    static_cast<Candidate*>(c.Buffer(t.aux_buf))[t.slot] = cand;
  }
  __syncthreads();
}

}  // namespace device
}  // namespace tileinfer
