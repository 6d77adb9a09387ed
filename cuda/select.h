// Greedy selection over LM_HEAD candidate slots, shared by the CUDA worker (every block runs
// it on the same slots, so all agree) and the CPU executor: one definition, the same rule.
// A plain C++ header that nvcc also compiles for the device.
#pragma once

#include <cmath>
#include <cstdint>

#include "cuda/plan_format.h"

#ifdef __CUDACC__
#define TILEINFER_HOST_DEVICE __host__ __device__
#else
#define TILEINFER_HOST_DEVICE
#endif

namespace tileinfer {

// One LM_HEAD task's best row (format_spec.py: dtype CANDIDATE, 8 bytes).
struct Candidate {
  float value;  // largest logit of the task's rows
  int32_t id;   // its token id (lowest among ties), or kCandidateNonFinite
};
static_assert(sizeof(Candidate) == 8, "CANDIDATE is 8 bytes in format_spec.py");

// The largest value, the lowest id among ties; kCandidateNonFinite when any slot saw a
// non-finite logit. Slots cover ascending row ranges, but ties are broken by id anyway.
TILEINFER_HOST_DEVICE inline int32_t SelectGreedy(const Candidate* slots, int n) {
  int32_t best = -1;
  float best_value = 0;
  for (int s = 0; s < n; ++s) {
    const Candidate c = slots[s];
#ifdef __CUDA_ARCH__
    const bool finite = isfinite(c.value);
#else
    const bool finite = std::isfinite(c.value);
#endif
    if (c.id == format::kCandidateNonFinite || !finite) return format::kCandidateNonFinite;
    if (best < 0 || c.value > best_value || (c.value == best_value && c.id < best)) {
      best = c.id;
      best_value = c.value;
    }
  }
  return best;
}

}  // namespace tileinfer
