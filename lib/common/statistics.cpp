#include "lib/common/statistics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace batchscope {
namespace {

void require_samples(const std::vector<double>& xs, const char* what) {
  if (xs.empty()) throw std::invalid_argument(std::string(what) + " of an empty sample is undefined");
}

}  // namespace

double mean(const std::vector<double>& xs) {
  require_samples(xs, "the mean");
  double sum = 0;
  for (double x : xs) sum += x;
  return sum / static_cast<double>(xs.size());
}

double median(const std::vector<double>& xs) { return percentile(xs, 0.5); }

double percentile(const std::vector<double>& xs, double q) {
  require_samples(xs, "a percentile");
  if (!(q >= 0.0 && q <= 1.0)) throw std::invalid_argument("a percentile needs q in [0, 1]");
  std::vector<double> sorted = xs;
  std::sort(sorted.begin(), sorted.end());
  // The rank q * (n - 1) falls between two order statistics; interpolate between them.
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = rank - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

std::optional<double> stddev(const std::vector<double>& xs) {
  if (xs.size() < 2) return std::nullopt;
  const double m = mean(xs);
  double squares = 0;
  for (double x : xs) squares += (x - m) * (x - m);
  return std::sqrt(squares / static_cast<double>(xs.size() - 1));
}

std::optional<double> standard_error_of_mean(const std::vector<double>& xs) {
  const std::optional<double> s = stddev(xs);
  if (!s) return std::nullopt;
  return *s / std::sqrt(static_cast<double>(xs.size()));
}

std::optional<double> coefficient_of_variation(const std::vector<double>& xs) {
  const std::optional<double> s = stddev(xs);
  if (!s) return std::nullopt;
  const double m = mean(xs);
  if (m == 0.0) return std::nullopt;
  return *s / m;
}

std::optional<Interval> median_confidence_interval(const std::vector<double>& xs, double level) {
  const std::size_t n = xs.size();
  if (n == 0 || !(level > 0 && level < 1)) return std::nullopt;
  // P(B <= i) summed term by term in logs: C(n, i) / 2^n = exp(lgamma(n+1) - lgamma(i+1) - lgamma(n-i+1) - n ln 2).
  const double tail_allowed = (1 - level) / 2;
  const double log_total = std::lgamma(static_cast<double>(n) + 1) - static_cast<double>(n) * std::log(2.0);
  double below = 0;  // P(B <= k - 1)
  std::size_t k = 0;
  while (k < n / 2) {
    const auto i = static_cast<double>(k);
    const double term = std::exp(log_total - std::lgamma(i + 1) - std::lgamma(static_cast<double>(n) - i + 1));
    if (below + term > tail_allowed) break;
    below += term;
    ++k;
  }
  if (k == 0) return std::nullopt;
  std::vector<double> sorted = xs;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k - 1), sorted.end());
  const double low = sorted[k - 1];
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n - k), sorted.end());
  return Interval{low, sorted[n - k]};
}

Summary summarize(const std::vector<double>& xs) {
  require_samples(xs, "a summary");
  Summary s;
  s.count = static_cast<int>(xs.size());
  s.median = median(xs);
  s.p10 = percentile(xs, 0.1);
  s.p90 = percentile(xs, 0.9);
  s.mean = mean(xs);
  const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
  s.min = *lo;
  s.max = *hi;
  s.stddev = stddev(xs);
  s.cv = coefficient_of_variation(xs);
  return s;
}

}  // namespace batchscope
