#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "lib/common/statistics.h"

namespace batchscope {
namespace {

TEST(Statistics, MeanOfAFewValues) {
  EXPECT_DOUBLE_EQ(mean({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(mean({7}), 7);
}

TEST(Statistics, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({9}), 9);
}

// Values checked against numpy.percentile(xs, 100 * q) with its default linear method.
TEST(Statistics, PercentileInterpolatesBetweenClosestRanks) {
  const std::vector<double> xs = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(percentile(xs, 0.0), 1);
  EXPECT_DOUBLE_EQ(percentile(xs, 0.1), 1.3);
  EXPECT_DOUBLE_EQ(percentile(xs, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile(xs, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(percentile(xs, 1.0), 4);
  EXPECT_DOUBLE_EQ(percentile({10, 20, 30, 40, 50}, 0.1), 14);
  EXPECT_DOUBLE_EQ(percentile({10, 20, 30, 40, 50}, 0.9), 46);
  EXPECT_DOUBLE_EQ(percentile({10, 20, 30, 40, 50}, 0.25), 20);
}

TEST(Statistics, PercentileOfOneSampleIsThatSample) {
  EXPECT_DOUBLE_EQ(percentile({3.5}, 0.1), 3.5);
  EXPECT_DOUBLE_EQ(percentile({3.5}, 0.9), 3.5);
}

TEST(Statistics, PercentileRejectsBadArguments) {
  EXPECT_THROW(percentile({}, 0.5), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, -0.1), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, 1.1), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, std::nan("")), std::invalid_argument);
  EXPECT_THROW(mean({}), std::invalid_argument);
  EXPECT_THROW(median({}), std::invalid_argument);
}

TEST(Statistics, InputIsNotReordered) {
  const std::vector<double> xs = {3, 1, 2};
  percentile(xs, 0.5);
  summarize(xs);
  EXPECT_EQ(xs, (std::vector<double>{3, 1, 2}));
}

TEST(Statistics, StddevUsesNMinusOne) {
  // Deviations from 2.5 square to 2.25 + 0.25 + 0.25 + 2.25 = 5, and 5 / 3 is the variance.
  ASSERT_TRUE(stddev({4, 1, 3, 2}).has_value());
  EXPECT_DOUBLE_EQ(*stddev({4, 1, 3, 2}), std::sqrt(5.0 / 3.0));
  EXPECT_DOUBLE_EQ(*stddev({-1, 1}), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(*stddev({2, 2, 2}), 0);
}

TEST(Statistics, StddevNeedsTwoSamples) {
  EXPECT_FALSE(stddev({}).has_value());
  EXPECT_FALSE(stddev({1}).has_value());
}

TEST(Statistics, StandardErrorOfTheMeanIsStddevOverRootN) {
  EXPECT_DOUBLE_EQ(*standard_error_of_mean({4, 1, 3, 2}), std::sqrt(5.0 / 3.0) / 2.0);
  EXPECT_DOUBLE_EQ(*standard_error_of_mean({-1, 1}), 1.0);
  EXPECT_FALSE(standard_error_of_mean({7}).has_value());
}

TEST(Statistics, CoefficientOfVariation) {
  ASSERT_TRUE(coefficient_of_variation({4, 1, 3, 2}).has_value());
  EXPECT_DOUBLE_EQ(*coefficient_of_variation({4, 1, 3, 2}), std::sqrt(5.0 / 3.0) / 2.5);
  EXPECT_FALSE(coefficient_of_variation({}).has_value());
  EXPECT_FALSE(coefficient_of_variation({5}).has_value());
  EXPECT_FALSE(coefficient_of_variation({-1, 1}).has_value());
}

TEST(Statistics, SummarizeFiveSamples) {
  const Summary s = summarize({30, 10, 50, 20, 40});
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.median, 30);
  EXPECT_DOUBLE_EQ(s.p10, 14);
  EXPECT_DOUBLE_EQ(s.p90, 46);
  EXPECT_DOUBLE_EQ(s.mean, 30);
  EXPECT_DOUBLE_EQ(s.min, 10);
  EXPECT_DOUBLE_EQ(s.max, 50);
  // Squared deviations 400 + 100 + 0 + 100 + 400 = 1000, over n - 1 = 4.
  ASSERT_TRUE(s.stddev.has_value());
  EXPECT_DOUBLE_EQ(*s.stddev, std::sqrt(250.0));
  ASSERT_TRUE(s.cv.has_value());
  EXPECT_DOUBLE_EQ(*s.cv, std::sqrt(250.0) / 30);
}

TEST(Statistics, SummarizeOneSampleHasNoSpread) {
  const Summary s = summarize({2.5});
  EXPECT_EQ(s.count, 1);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.p10, 2.5);
  EXPECT_DOUBLE_EQ(s.p90, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 2.5);
  EXPECT_DOUBLE_EQ(s.max, 2.5);
  EXPECT_FALSE(s.stddev.has_value());
  EXPECT_FALSE(s.cv.has_value());
}

TEST(Statistics, SummarizeRejectsAnEmptySample) { EXPECT_THROW(summarize({}), std::invalid_argument); }

TEST(MedianInterval, NeedsSixSamplesForNinetyFivePercent) {
  EXPECT_FALSE(median_confidence_interval({1, 2, 3, 4, 5}));
  const auto six = median_confidence_interval({6, 2, 5, 1, 4, 3});
  ASSERT_TRUE(six);
  EXPECT_EQ(six->low, 1);  // with six samples only the extremes cover 95% (96.9%)
  EXPECT_EQ(six->high, 6);
  EXPECT_FALSE(median_confidence_interval({}));
}

TEST(MedianInterval, OrderStatisticsFromTheBinomial) {
  // n = 20: P(B <= 5) = 0.0207 and P(B <= 6) = 0.0577 for B ~ Binomial(20, 1/2), so x(6) and x(15).
  std::vector<double> xs;
  for (int i = 20; i >= 1; --i) xs.push_back(i);
  const auto ci = median_confidence_interval(xs);
  ASSERT_TRUE(ci);
  EXPECT_EQ(ci->low, 6);
  EXPECT_EQ(ci->high, 15);
  EXPECT_EQ(xs.front(), 20) << "the input is not reordered";
  // A lower level gives a narrower interval: 80% at n = 20 is x(7), x(14) (P(B <= 6) = 0.0577 <= 0.1).
  const auto narrow = median_confidence_interval(xs, 0.80);
  ASSERT_TRUE(narrow);
  EXPECT_EQ(narrow->low, 7);
  EXPECT_EQ(narrow->high, 14);
}

TEST(MedianInterval, LargeSamplesFollowTheNormalApproximation) {
  // n = 1000: the ranks are n/2 -+ 1.96 sqrt(n)/2, about 469 and 532.
  std::vector<double> xs;
  for (int i = 1; i <= 1000; ++i) xs.push_back(i);
  const auto ci = median_confidence_interval(xs);
  ASSERT_TRUE(ci);
  EXPECT_NEAR(ci->low, 469, 1.5);
  EXPECT_NEAR(ci->high, 1001 - ci->low, 1e-12);
}

}  // namespace
}  // namespace batchscope
