#include "host/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "cuda/plan_format.h"
#include "cuda/sample.h"
#include "host/error.h"

namespace tileinfer {
namespace {

// `v` with the digits a float needs to be read back (std::to_string's six decimals printed
// top_p 1.0000001 as "1.000000" and -1e-9 as "-0.000000"); a float converts to it exactly.
std::string FloatText(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", v);
  return text;
}

}  // namespace

void CheckSamplingOptions(const SamplingOptions& o) {
  if (!(o.temperature >= 0.0f) || !std::isfinite(o.temperature)) {
    throw Error("temperature must be a finite number >= 0 (0 means greedy), not " + FloatText(o.temperature));
  }
  if (o.top_k < 0) throw Error("top_k must be >= 0 (0 keeps every id), not " + std::to_string(o.top_k));
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) {
    throw Error("top_p must be in (0, 1] (1 keeps every id), not " + FloatText(o.top_p));
  }
}

float OptionFloat(double v, const std::string& what, bool zero_allowed) {
  if (std::isfinite(v) && std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max())) {
    throw Error(what + "=" + FloatText(v) + " is beyond a float's range (+-3.4e38): give a smaller value");
  }
  if (v != 0.0 && static_cast<float>(v) == 0.0f) {  // 1e-50 as a float is 0: greedy, not what was asked
    throw Error(what + "=" + FloatText(v) + " is too small for a float (it would be 0): give " +
                (zero_allowed ? "0, or at least 1.5e-45" : "at least 1.5e-45"));
  }
  return static_cast<float>(v);
}

double UniformDraw(uint64_t seed, uint64_t counter) {
  return static_cast<double>(DrawBits(seed, counter) >> 11) * 0x1.0p-53;
}

int SampleToken(const std::vector<float>& logits, const SamplingOptions& o, uint64_t counter) {
  CheckSamplingOptions(o);
  int best = -1;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (!std::isfinite(logits[i])) return format::kCandidateNonFinite;
    if (best < 0 || logits[i] > logits[best]) best = static_cast<int>(i);
  }
  if (o.temperature == 0.0f || best < 0) return best;
  // The rule of cuda/sample.h, serially: the kept set is {i : key(i) >= threshold}.
  const size_t n = logits.size();
  std::vector<uint64_t> key(n), mass(n);
  for (size_t i = 0; i < n; ++i) {
    key[i] = SampleKey(logits[i], static_cast<int>(i));
    mass[i] = SampleMass(logits[i], logits[best], o.temperature);
  }
  uint64_t threshold = 0;
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < n) {
    std::vector<uint64_t> sorted = key;
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(), std::greater<uint64_t>());
    threshold = sorted[o.top_k - 1];
  }
  if (o.top_p < 1.0f) {
    std::vector<std::pair<uint64_t, uint64_t>> kept;  // (key, mass), largest key first
    uint64_t kept_mass = 0;
    for (size_t i = 0; i < n; ++i) {
      if (key[i] < threshold) continue;
      kept.emplace_back(key[i], mass[i]);
      kept_mass += mass[i];
    }
    std::sort(kept.begin(), kept.end(), std::greater<std::pair<uint64_t, uint64_t>>());
    const uint64_t target = TopPTarget(kept_mass, o.top_p);
    uint64_t cumulative = 0;
    for (const auto& [k, m] : kept) {
      cumulative += m;
      if (cumulative >= target) {
        threshold = k;
        break;
      }
    }
  }
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) total += key[i] >= threshold ? mass[i] : 0;
  const uint64_t u = DrawBelow(o.seed, counter, total);  // total >= 2^40: the best id is kept
  uint64_t cumulative = 0;
  for (size_t i = 0; i < n; ++i) {
    if (key[i] < threshold) continue;
    cumulative += mass[i];
    if (u < cumulative) return static_cast<int>(i);
  }
  return best;  // unreachable: u < total
}

}  // namespace tileinfer
