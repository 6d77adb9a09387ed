// The sampler against its definition: greedy at temperature 0, reproducible draws, and
// the empirical distribution of 40,000 draws against softmax(logits / T) restricted by top-k
// and top-p, by a chi-square test at p = 0.001.
#include "host/sampler.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/sample.h"
#include "host/error.h"

namespace tileinfer {
namespace {

// Expected probabilities computed here from the definition, independently of sampler.cc.
std::vector<double> Expected(const std::vector<float>& logits, double t, int top_k, double top_p) {
  const size_t n = logits.size();
  std::vector<double> w(n);
  double max_logit = -INFINITY;
  for (float l : logits) max_logit = std::max<double>(max_logit, l);
  for (size_t i = 0; i < n; ++i) w[i] = std::exp((logits[i] - max_logit) / t);
  // ids by rank (0 = most likely), ties to the lower id
  std::vector<size_t> by_rank(n);
  for (size_t i = 0; i < n; ++i) by_rank[i] = i;
  std::stable_sort(by_rank.begin(), by_rank.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  for (size_t r = 0; r < n; ++r)
    if (top_k > 0 && r >= static_cast<size_t>(top_k)) w[by_rank[r]] = 0;
  double total = 0;
  for (double x : w) total += x;
  if (top_p < 1) {  // walk by rank, keep until the cumulative share reaches top_p
    std::vector<double> kept(n, 0);
    double cumulative = 0;
    for (size_t r = 0; r < n && cumulative < top_p; ++r) {
      const size_t i = by_rank[r];
      if (w[i] == 0) continue;
      kept[i] = w[i];
      cumulative += w[i] / total;
    }
    w = kept;
    total = 0;
    for (double x : w) total += x;
  }
  for (double& x : w) x /= total;
  return w;
}

double ChiSquare(const std::vector<float>& logits, const SamplingOptions& o, int draws, int* dof) {
  std::vector<int> counts(logits.size(), 0);
  for (int d = 0; d < draws; ++d) ++counts[SampleToken(logits, o, d)];
  const std::vector<double> p = Expected(logits, o.temperature, o.top_k, o.top_p);
  double chi = 0;
  *dof = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "id " << i << " is outside top-k/top-p but was drawn";
      continue;
    }
    const double e = p[i] * draws;
    chi += (counts[i] - e) * (counts[i] - e) / e;
    ++*dof;
  }
  return chi;
}

// Upper 0.1% points of chi-square (standard tables).
double Critical(int dof) {
  static const double table[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12};
  return table[dof];
}

const std::vector<float> kLogits = {2.0f, 1.5f, 1.5f, 0.3f, -0.5f, -1.0f, 0.9f, -3.0f};

TEST(SamplerTest, TemperatureZeroIsGreedyWithLowestIdOnTies) {
  SamplingOptions o;
  EXPECT_EQ(SampleToken({0.5f, 3.0f, 3.0f, 1.0f}, o, 7), 1);
  o.seed = 99;
  EXPECT_EQ(SampleToken(kLogits, o, 3), 0);
}

TEST(SamplerTest, SameSeedSameDrawsOtherSeedOtherDraws) {
  SamplingOptions o{0.8f, 0, 1.0f, 1234};
  std::vector<int> a, b, c;
  SamplingOptions other = o;
  other.seed = 1235;
  for (int i = 0; i < 200; ++i) {
    a.push_back(SampleToken(kLogits, o, i));
    b.push_back(SampleToken(kLogits, o, i));
    c.push_back(SampleToken(kLogits, other, i));
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(SamplerTest, UniformDrawIsInUnitInterval) {
  double lo = 1, hi = 0, mean = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = UniformDraw(42, i);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    mean += u / 100000;
  }
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_NEAR(mean, 0.5, 0.005);
}

struct Case {
  float temperature;
  int top_k;
  float top_p;
};

class DistributionTest : public ::testing::TestWithParam<Case> {};

TEST_P(DistributionTest, MatchesSoftmaxByChiSquare) {
  const Case c = GetParam();
  SamplingOptions o{c.temperature, c.top_k, c.top_p, 2026};
  int dof = 0;
  const double chi = ChiSquare(kLogits, o, 40000, &dof);
  ASSERT_GE(dof, 1);
  EXPECT_LT(chi, Critical(dof)) << "T=" << c.temperature << " k=" << c.top_k << " p=" << c.top_p;
}

INSTANTIATE_TEST_SUITE_P(Options, DistributionTest,
                         ::testing::Values(Case{1.0f, 0, 1.0f}, Case{0.7f, 0, 1.0f}, Case{1.3f, 4, 1.0f},
                                           Case{1.0f, 0, 0.8f}, Case{0.9f, 5, 0.9f}, Case{2.0f, 3, 1.0f}));

TEST(SamplerTest, KeyOrdersByLogitThenLowerId) {
  const std::vector<float> v = {-3.5f, -0.0f, 0.0f, 1e-30f, -1e-30f, 2.0f, 2.0f, -1e30f, 1e30f, -2.0f};
  for (size_t a = 0; a < v.size(); ++a) {
    for (size_t b = 0; b < v.size(); ++b) {
      if (a == b) continue;
      const bool a_first = v[a] > v[b] || (v[a] == v[b] && a < b);
      EXPECT_EQ(SampleKey(v[a], a) > SampleKey(v[b], b), a_first) << a << " vs " << b;
    }
  }
}

TEST(SamplerTest, MassIsFixedPointSoftmaxWeight) {
  EXPECT_EQ(SampleMass(3.0f, 3.0f, 0.7f), uint64_t{1} << 40);
  EXPECT_NEAR(static_cast<double>(SampleMass(1.0f, 3.0f, 2.0f)) / 1099511627776.0, std::exp(-1.0), 1e-12);
  EXPECT_EQ(SampleMass(-100.0f, 0.0f, 1.0f), 0u);  // e^-100 < 2^-41
  EXPECT_EQ(TopPTarget(1000, 0.5f), 500u);
  EXPECT_EQ(TopPTarget(1000, 1.0f), 1000u);
  EXPECT_EQ(TopPTarget(3, 1e-9f), 1u);
  for (uint64_t m : {uint64_t{1}, uint64_t{7}, uint64_t{1} << 40, ~uint64_t{0}}) {
    for (int c = 0; c < 1000; ++c) EXPECT_LT(DrawBelow(5, c, m), m);
  }
}

TEST(SamplerTest, TopKOneAndTinyTopPAreGreedy) {
  const std::vector<float> tie = {0.5f, 3.0f, 3.0f, 1.0f, 2.9f};
  for (int c = 0; c < 300; ++c) {
    EXPECT_EQ(SampleToken(tie, SamplingOptions{1.5f, 1, 1.0f, 9}, c), 1);
    EXPECT_EQ(SampleToken(tie, SamplingOptions{1.5f, 0, 1e-6f, 9}, c), 1);
    // top_k = 2 over a tie keeps both tied ids and nothing else.
    const int t = SampleToken(tie, SamplingOptions{1.0f, 2, 1.0f, 9}, c);
    EXPECT_TRUE(t == 1 || t == 2) << t;
  }
}

// The top-p set stops at the first key whose cumulative mass reaches the target, also when it
// reaches it exactly: four equal logits (mass 2^40 each) and top_p 0.5 give the target 2^41,
// which ids 0 and 1 reach; ids 2 and 3 are never drawn, and both kept ids are.
TEST(SamplerTest, TopPReachedExactlyKeepsNoMore) {
  const std::vector<float> equal = {1.0f, 1.0f, 1.0f, 1.0f};
  int drawn[4] = {0, 0, 0, 0};
  for (int c = 0; c < 400; ++c) ++drawn[SampleToken(equal, SamplingOptions{1.0f, 0, 0.5f, 3}, c)];
  EXPECT_GT(drawn[0], 0);
  EXPECT_GT(drawn[1], 0);
  EXPECT_EQ(drawn[2], 0);
  EXPECT_EQ(drawn[3], 0);
}

// A vocabulary-sized row (as the GPU worker sees) against the definition's probabilities.
TEST(SamplerTest, LargeVocabularyDistribution) {
  std::vector<float> logits(50000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = -8.0f + 0.00013f * static_cast<float>((i * 7919) % 50000);
  logits[123] = 4.0f;
  logits[40000] = 3.5f;
  logits[7] = 3.5f;
  SamplingOptions o{1.0f, 40, 0.9f, 77};
  const std::vector<double> p = Expected(logits, o.temperature, o.top_k, o.top_p);
  std::vector<int> counts(logits.size(), 0);
  const int draws = 3000;
  for (int d = 0; d < draws; ++d) ++counts[SampleToken(logits, o, d)];
  double chi = 0;
  int dof = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      ASSERT_EQ(counts[i], 0) << "id " << i << " is outside top-k/top-p but was drawn";
      continue;
    }
    chi += (counts[i] - p[i] * draws) * (counts[i] - p[i] * draws) / (p[i] * draws);
    ++dof;
  }
  ASSERT_GE(dof, 1);
  ASSERT_LE(dof, 8);
  EXPECT_LT(chi, Critical(dof));
}

TEST(SamplerTest, NonFiniteLogitGivesMinusOne) {
  SamplingOptions o{1.0f, 0, 1.0f, 1};
  EXPECT_EQ(SampleToken({0.0f, NAN, 1.0f}, o, 0), -1);
  EXPECT_EQ(SampleToken({0.0f, INFINITY}, SamplingOptions{}, 0), -1);
}

TEST(SamplerTest, RejectsBadOptions) {
  EXPECT_THROW(CheckSamplingOptions({-1.0f, 0, 1.0f, 0}), Error);
  EXPECT_THROW(CheckSamplingOptions({1.0f, -2, 1.0f, 0}), Error);
  EXPECT_THROW(CheckSamplingOptions({1.0f, 0, 0.0f, 0}), Error);
  EXPECT_THROW(CheckSamplingOptions({1.0f, 0, 1.5f, 0}), Error);
  EXPECT_THROW(CheckSamplingOptions({NAN, 0, 1.0f, 0}), Error);
}

}  // namespace
}  // namespace tileinfer
