// host/fixed_point.h against format_spec's definition: fix(v) = v * 2^32 rounded to the
// nearest integer with ties to even, real(q) = q rounded to the nearest float * 2^-32.
// Values chosen where truncation, rounding away from zero and ties-to-even differ.
#include "host/fixed_point.h"

#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

namespace tileinfer {
namespace {

TEST(FixedPointTest, FixRoundsToNearestWithTiesToEven) {
  const float half = std::ldexp(1.0f, -33);  // 0.5 units of 2^-32
  EXPECT_EQ(FixedFromFloat(half), 0);            // 0.5 -> 0 (even)
  EXPECT_EQ(FixedFromFloat(3 * half), 2);        // 1.5 -> 2 (even; truncation gives 1)
  EXPECT_EQ(FixedFromFloat(5 * half), 2);        // 2.5 -> 2 (even; away from zero gives 3)
  EXPECT_EQ(FixedFromFloat(-3 * half), -2);      // -1.5 -> -2
  EXPECT_EQ(FixedFromFloat(-5 * half), -2);      // -2.5 -> -2
  EXPECT_EQ(FixedFromFloat(std::ldexp(3.0f, -35)), 0);  // 0.375 -> 0
  EXPECT_EQ(FixedFromFloat(std::ldexp(5.0f, -35)), 1);  // 0.625 -> 1 (truncation gives 0)
  EXPECT_EQ(FixedFromFloat(1.0f), int64_t{1} << 32);
  EXPECT_EQ(FixedFromFloat(-1.25f), -(int64_t{5} << 30));
  EXPECT_EQ(FixedFromFloat(format::kFixedMaxMagnitude), int64_t{1} << 53);  // 2^21 * 2^32
}

TEST(FixedPointTest, RangeHoldsUpToTheMagnitudeOnly) {
  EXPECT_TRUE(FixedHolds(format::kFixedMaxMagnitude));
  EXPECT_TRUE(FixedHolds(-format::kFixedMaxMagnitude));
  EXPECT_FALSE(FixedHolds(std::nextafter(format::kFixedMaxMagnitude, INFINITY)));
  EXPECT_FALSE(FixedHolds(INFINITY));
  EXPECT_FALSE(FixedHolds(NAN));
}

TEST(FixedPointTest, RealRoundsToNearestFloat) {
  EXPECT_EQ(FloatFromFixed(int64_t{1} << 32), 1.0f);
  EXPECT_EQ(FloatFromFixed(-(int64_t{3} << 31)), -1.5f);
  // 2^24 + 1 units is not a float: it rounds to 2^24 (even), then scales exactly.
  EXPECT_EQ(FloatFromFixed((int64_t{1} << 24) + 1), std::ldexp(1.0f, -8));
  // 2^24 + 3 rounds up to 2^24 + 4 (the tie goes to the even mantissa).
  EXPECT_EQ(FloatFromFixed((int64_t{1} << 24) + 3), std::ldexp(float((1 << 24) + 4), -32));
  for (const float v : {0.0f, 1.0f, -3.75f, 1234.5f, 0.1f}) {
    EXPECT_EQ(FloatFromFixed(FixedFromFloat(v)), v) << v;  // exact for floats on the 2^-32 grid
  }
}

}  // namespace
}  // namespace tileinfer
