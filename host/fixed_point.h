// The FIXED64 residual's conversions (py/planner/format_spec.py): fix(v) = v * 2^32 rounded to
// the nearest integer, ties to even, for |v| <= kFixedMaxMagnitude; real(q) = q rounded to
// the nearest float, * 2^-32. The CPU executor's; the GPU worker's are cuda/common.cuh Fix
// and Real (__float2ll_rn, __ll2float_rn: the same roundings).
#pragma once

#include <cmath>
#include <cstdint>

#include "cuda/plan_format.h"

namespace tileinfer {

constexpr float kFixedScale = 4294967296.0f;  // 2^kFixedFractionBits
static_assert(format::kFixedFractionBits == 32, "kFixedScale is 2^32");

// True when v can be held: |v| <= kFixedMaxMagnitude (false for inf and NaN).
inline bool FixedHolds(float v) { return std::fabs(v) <= format::kFixedMaxMagnitude; }

// fix(v) for a v that FixedHolds; the product is exact, so the one rounding is nearbyint's
// (round to nearest, ties to even, in the default floating-point environment).
inline int64_t FixedFromFloat(float v) { return static_cast<int64_t>(std::nearbyint(v * kFixedScale)); }

// real(q): q rounded to the nearest float (the conversion's rounding), times 2^-32 (exact).
inline float FloatFromFixed(int64_t q) { return static_cast<float>(q) * (1.0f / kFixedScale); }

}  // namespace tileinfer
