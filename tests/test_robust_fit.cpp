#include <gtest/gtest.h>

#include <stdexcept>

#include "lib/analysis/robust_fit.h"

namespace batchscope {
namespace {

TEST(TheilSen, ExactLineIsRecovered) {
  const LineFit fit = theil_sen({1, 2, 3, 4, 5}, {3, 5, 7, 9, 11});
  EXPECT_DOUBLE_EQ(fit.slope, 2.0);
  EXPECT_DOUBLE_EQ(fit.intercept, 1.0);
}

TEST(TheilSen, OutliersDoNotMoveTheLineButMoveLeastSquares) {
  std::vector<double> x, y;
  for (int i = 1; i <= 20; ++i) {
    x.push_back(i);
    y.push_back(10 + 0.5 * i);
  }
  y[17] = 100;
  y[18] = 120;
  const LineFit robust = theil_sen(x, y);
  EXPECT_NEAR(robust.slope, 0.5, 1e-9);
  EXPECT_NEAR(robust.intercept, 10.0, 1e-9);
  EXPECT_GT(least_squares(x, y).slope, 1.0);
}

TEST(TheilSen, ManyPointsAreThinnedButStillExact) {
  std::vector<double> x, y;
  for (int i = 0; i < 5000; ++i) {
    x.push_back(i);
    y.push_back(3 - 0.25 * i);
  }
  const LineFit fit = theil_sen(x, y);
  EXPECT_DOUBLE_EQ(fit.slope, -0.25);
  EXPECT_DOUBLE_EQ(fit.intercept, 3.0);
}

TEST(TheilSen, NeedsTwoDistinctX) {
  EXPECT_THROW(theil_sen({1, 1, 1}, {1, 2, 3}), std::invalid_argument);
  EXPECT_THROW(theil_sen({1, 2}, {1}), std::invalid_argument);
}

TEST(LeastSquares, FitsAndDegeneratesToTheMean) {
  const LineFit fit = least_squares({0, 1, 2}, {1, 2, 4});
  EXPECT_NEAR(fit.slope, 1.5, 1e-12);
  EXPECT_NEAR(fit.intercept, 5.0 / 6.0, 1e-12);
  const LineFit flat = least_squares({2, 2}, {1, 3});
  EXPECT_EQ(flat.slope, 0.0);
  EXPECT_EQ(flat.intercept, 2.0);
}

TEST(RobustSigma, ScaledMadIgnoresOneWildValue) {
  EXPECT_NEAR(robust_sigma({1, 2, 3, 4, 1000}), 1.4826, 1e-12);  // MAD of |x - 3| = {2,1,0,1,997} is 1
  EXPECT_EQ(robust_sigma({}), 0.0);
  EXPECT_EQ(robust_sigma({5, 5, 5}), 0.0);
}

}  // namespace
}  // namespace batchscope
