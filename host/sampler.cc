#include "host/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "cuda/plan_format.h"
#include "host/error.h"

namespace tileinfer {

void CheckSamplingOptions(const SamplingOptions& o) {
  if (!(o.temperature >= 0.0f) || !std::isfinite(o.temperature)) {
    throw Error("temperature must be a finite number >= 0 (0 means greedy), not " + std::to_string(o.temperature));
  }
  if (o.top_k < 0) throw Error("top_k must be >= 0 (0 keeps every id), not " + std::to_string(o.top_k));
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) {
    throw Error("top_p must be in (0, 1] (1 keeps every id), not " + std::to_string(o.top_p));
  }
}

double UniformDraw(uint64_t seed, uint64_t counter) {
  // SplitMix64 (Steele, Lea, Flood 2014) of the pair, as a stateless counter-based stream.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (counter + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

int SampleToken(const std::vector<float>& logits, const SamplingOptions& o, uint64_t counter) {
  CheckSamplingOptions(o);
  int best = -1;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (!std::isfinite(logits[i])) return format::kCandidateNonFinite;
    if (best < 0 || logits[i] > logits[best]) best = static_cast<int>(i);
  }
  if (o.temperature == 0.0f || best < 0) return best;
  // Candidates in order of decreasing logit, lower id first among ties.
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  auto more_likely = [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  size_t keep = order.size();
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < keep) {
    keep = o.top_k;
    std::partial_sort(order.begin(), order.begin() + keep, order.end(), more_likely);
  } else {
    std::sort(order.begin(), order.end(), more_likely);
  }
  order.resize(keep);
  std::vector<double> p(keep);
  const double max_logit = logits[order[0]];
  double total = 0;
  for (size_t i = 0; i < keep; ++i) {
    p[i] = std::exp((logits[order[i]] - max_logit) / o.temperature);
    total += p[i];
  }
  if (o.top_p < 1.0f) {  // smallest prefix whose probability reaches top_p
    double cumulative = 0;
    size_t n = 0;
    while (n < keep) {
      cumulative += p[n] / total;
      ++n;
      if (cumulative >= o.top_p) break;
    }
    keep = n;
    total = std::accumulate(p.begin(), p.begin() + keep, 0.0);
  }
  const double u = UniformDraw(o.seed, counter) * total;
  double cumulative = 0;
  for (size_t i = 0; i < keep; ++i) {
    cumulative += p[i];
    if (u < cumulative) return order[i];
  }
  return order[keep - 1];  // u * total rounded up to total
}

}  // namespace tileinfer
