#pragma once

#include <vector>

namespace batchscope {

struct LineFit {
  double intercept = 0;
  double slope = 0;
};

// Theil–Sen estimator: the slope is the median of the slopes between all pairs of points with distinct
// x, the intercept the median of y - slope * x. Up to about 29% of the points can be arbitrarily wrong
// without moving the line. Needs at least two distinct x (throws std::invalid_argument otherwise).
LineFit theil_sen(const std::vector<double>& x, const std::vector<double>& y);

// Ordinary least squares, for short runs of points where robustness matters less than using all of
// them; the slope is 0 for fewer than two distinct x.
LineFit least_squares(const std::vector<double>& x, const std::vector<double>& y);

// Median absolute deviation from the median, scaled by 1.4826 to estimate a normal sigma; 0 for an
// empty sample.
double robust_sigma(const std::vector<double>& xs);

}  // namespace batchscope
