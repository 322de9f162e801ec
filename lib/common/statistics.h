#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace batchscope {

// Pure functions over samples; none of them reorders its input.
double mean(const std::vector<double>& xs);
double median(const std::vector<double>& xs);
// Linear interpolation between closest ranks (numpy's default), q in [0, 1].
double percentile(const std::vector<double>& xs, double q);
// Sample standard deviation (n - 1); nullopt with fewer than two samples.
std::optional<double> stddev(const std::vector<double>& xs);
// Standard error of the mean, stddev / sqrt(n); nullopt with fewer than two samples.
std::optional<double> standard_error_of_mean(const std::vector<double>& xs);
// Coefficient of variation stddev / mean; nullopt with fewer than two samples or a zero mean.
std::optional<double> coefficient_of_variation(const std::vector<double>& xs);

// A distribution-free confidence interval for the median: the order statistics x(k) and x(n+1-k) with
// the largest k whose coverage, 1 - 2 P(B <= k - 1) for B ~ Binomial(n, 1/2), is at least `level`.
// nullopt where even the sample's extremes cover less (fewer than 6 samples for 95%).
struct Interval {
  double low = 0, high = 0;
};
std::optional<Interval> median_confidence_interval(const std::vector<double>& xs, double level = 0.95);

struct Summary {
  int count = 0;
  double median = 0, p10 = 0, p90 = 0, mean = 0, min = 0, max = 0;
  std::optional<double> stddev, cv;
};
// Throws std::invalid_argument on an empty sample.
Summary summarize(const std::vector<double>& xs);

}  // namespace batchscope
