#pragma once

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
// Coefficient of variation stddev / mean; nullopt with fewer than two samples or a zero mean.
std::optional<double> coefficient_of_variation(const std::vector<double>& xs);

struct Summary {
  int count = 0;
  double median = 0, p10 = 0, p90 = 0, mean = 0, min = 0, max = 0;
  std::optional<double> stddev, cv;
};
// Throws std::invalid_argument on an empty sample.
Summary summarize(const std::vector<double>& xs);

}  // namespace batchscope
