#include "lib/analysis/robust_fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "lib/common/statistics.h"

namespace batchscope {

LineFit theil_sen(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw std::invalid_argument("theil_sen needs as many x as y");
  // All pairs of up to kMaxPoints points, evenly spread over the input: a sweep of thousands of batch
  // sizes would otherwise need millions of slopes for no better line.
  constexpr size_t kMaxPoints = 1500;
  std::vector<size_t> used;
  const size_t n = std::min(x.size(), kMaxPoints);
  for (size_t k = 0; k < n; ++k) used.push_back(n == x.size() ? k : k * (x.size() - 1) / (n - 1));
  std::vector<double> slopes;
  slopes.reserve(n * (n - 1) / 2 + 1);
  for (size_t a = 0; a < used.size(); ++a) {
    for (size_t b = a + 1; b < used.size(); ++b) {
      const size_t i = used[a], j = used[b];
      if (x[j] != x[i]) slopes.push_back((y[j] - y[i]) / (x[j] - x[i]));
    }
  }
  if (slopes.empty()) throw std::invalid_argument("theil_sen needs at least two distinct x");
  LineFit fit;
  fit.slope = median(slopes);
  std::vector<double> intercepts(x.size());
  for (size_t i = 0; i < x.size(); ++i) intercepts[i] = y[i] - fit.slope * x[i];
  fit.intercept = median(intercepts);
  return fit;
}

LineFit least_squares(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw std::invalid_argument("least_squares needs as many x as y");
  LineFit fit;
  if (x.empty()) return fit;
  const double mx = mean(x);
  const double my = mean(y);
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  fit.slope = sxx > 0 ? sxy / sxx : 0.0;
  fit.intercept = my - fit.slope * mx;
  return fit;
}

double robust_sigma(const std::vector<double>& xs) {
  if (xs.empty()) return 0.0;
  const double m = median(xs);
  std::vector<double> deviations(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) deviations[i] = std::fabs(xs[i] - m);
  return 1.4826 * median(deviations);
}

}  // namespace batchscope
