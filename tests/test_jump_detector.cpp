#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/jump_detector.h"
#include "lib/analysis/periodicity.h"
#include "lib/statistics.h"
#include "tests/synthetic_steps.h"

namespace batchscope {
namespace {

using namespace synthetic;

TEST(MedianStandardError, FewerThanTwoSamplesHaveNone) {
  EXPECT_EQ(median_standard_error({}), 0);
  EXPECT_EQ(median_standard_error({3.0}), 0);
}

TEST(MedianStandardError, MatchesTheSpreadOfMediansOfNormalSamples) {
  Draws draws(7);
  std::vector<double> medians, estimates;
  for (int r = 0; r < 2000; ++r) {
    std::vector<double> steps(kSteps);
    for (double& t : steps) t = 10 + draws.normal();
    medians.push_back(median(steps));
    estimates.push_back(median_standard_error(steps));
  }
  // The estimate (1.2533 sigma / sqrt(n) from the MAD) should track the true spread within ~15%.
  EXPECT_NEAR(median(estimates) / *stddev(medians), 1.0, 0.15);
}

TEST(MedianStandardError, OneSlowStepBarelyMovesIt) {
  std::vector<double> steps = {10.0, 10.1, 9.9, 10.2, 9.8, 10.05, 9.95, 10.15, 9.85, 10.0};
  const double calm = median_standard_error(steps);
  steps[3] = 100;
  EXPECT_GT(calm, 0);
  EXPECT_LT(median_standard_error(steps), 1.5 * calm);
}

TEST(MedianStandardError, IdenticalSamplesGiveZeroButACoarseTimerDoesNot) {
  EXPECT_EQ(median_standard_error({5, 5, 5, 5}), 0);
  // More than half equal makes the MAD zero; the rest must still count.
  const double se = median_standard_error({5, 5, 5, 5, 5, 5, 6, 4, 6});
  EXPECT_GT(se, 0);
  EXPECT_TRUE(std::isfinite(se));
}

TEST(JumpDetector, FewerThanThreePointsGiveNoJumps) {
  EXPECT_TRUE(detect_jumps({}).jumps.empty());
  const JumpAnalysis two = detect_jumps({{1, 10, 0.1}, {2, 20, 0.1}});
  EXPECT_TRUE(two.jumps.empty());
  EXPECT_EQ(two.tested_pairs, 0);
  ASSERT_EQ(two.segments.size(), 1u);
  EXPECT_EQ(two.segments[0].points, 2);
  EXPECT_DOUBLE_EQ(two.slope_ms_per_sample, 10);
}

TEST(JumpDetector, RejectsUnsortedOrRepeatedBatchSizes) {
  EXPECT_THROW(detect_jumps({{1, 10, 0}, {3, 11, 0}, {2, 12, 0}}), std::invalid_argument);
  EXPECT_THROW(detect_jumps({{1, 10, 0}, {2, 11, 0}, {2, 12, 0}}), std::invalid_argument);
  EXPECT_THROW(detect_jumps({{1, 10, 0}, {2, NAN, 0}, {3, 12, 0}}), std::invalid_argument);
  EXPECT_THROW(detect_jumps({{1, 10, 0}, {2, 11, -0.1}, {3, 12, 0}}), std::invalid_argument);
  JumpDetectorOptions no_window;
  no_window.window = 0;
  EXPECT_THROW(detect_jumps({{1, 10, 0}, {2, 11, 0}, {3, 12, 0}}, no_window), std::invalid_argument);
}

TEST(JumpDetector, NoiseFreeLineHasNoJumpsAndItsSlope) {
  const JumpAnalysis a = detect_jumps(exact([](double b) { return 3 + 0.25 * b; }, sizes(1, 70)));
  EXPECT_TRUE(a.jumps.empty());
  EXPECT_TRUE(a.drops.empty());
  EXPECT_TRUE(a.spikes.empty());
  EXPECT_NEAR(a.slope_ms_per_sample, 0.25, 1e-12);
  EXPECT_EQ(a.tested_pairs, 69);
  ASSERT_EQ(a.segments.size(), 1u);
  EXPECT_NEAR(a.segments[0].rise_ms, 0.25 * 69, 1e-9);
  EXPECT_FALSE(a.staircase);
}

TEST(JumpDetector, NoiseFreeStepsAreFoundWithTheirSize) {
  const JumpAnalysis a = detect_jumps(exact(staircase(10, 0.5, {16, 32, 48, 64}, 0.1), sizes(1, 70)));
  ASSERT_EQ(a.jumps.size(), 4u);
  EXPECT_EQ(from_batches(a.jumps), (std::vector<int64_t>{16, 32, 48, 64}));
  EXPECT_EQ(a.jumps[0].to_batch, 17);
  EXPECT_NEAR(a.jumps[0].delta_ms, 0.1 * 18, 1e-9);  // 10% of t(16) = 18 ms
  EXPECT_NEAR(a.jumps[0].delta_pct, 10, 1e-6);
  EXPECT_EQ(a.jumps[0].confidence, "high");
  EXPECT_NEAR(a.slope_ms_per_sample, 0.5, 1e-12);
  ASSERT_EQ(a.segments.size(), 5u);
  EXPECT_EQ(a.segments[1].first_batch, 17);
  EXPECT_EQ(a.segments[1].last_batch, 32);
  EXPECT_EQ(a.segments[1].points, 16);
  EXPECT_NEAR(a.segments[1].slope_ms_per_sample, 0.5, 1e-9);
}

TEST(JumpDetector, StepsAtTheEdgesOfTheRange) {
  const JumpAnalysis a = detect_jumps(exact(staircase(10, 0.2, {2, 68}, 0.1), sizes(1, 70)));
  EXPECT_EQ(from_batches(a.jumps), (std::vector<int64_t>{2, 68}));
}

TEST(JumpDetector, FlatStepsAreAStaircaseAndSlopedOnesAreNot) {
  const Noise quiet{"0.5%", 0.005, false};
  const JumpAnalysis flat =
      detect_jumps(measure(staircase(20, 0, {16, 32, 48, 64}, 0.1), sizes(1, 70), quiet, 1));
  EXPECT_EQ(from_batches(flat.jumps), (std::vector<int64_t>{16, 32, 48, 64}));
  EXPECT_TRUE(flat.staircase);
  for (const Segment& s : flat.segments) EXPECT_TRUE(s.plateau) << s.first_batch << "-" << s.last_batch;

  // Each 16-wide segment rises 16 ms against steps of about 3 ms: a line with bumps, not a staircase.
  const JumpAnalysis steep =
      detect_jumps(measure(staircase(2, 1, {16, 32, 48}, 0.1), sizes(1, 70), quiet, 1));
  EXPECT_EQ(from_batches(steep.jumps), (std::vector<int64_t>{16, 32, 48}));
  EXPECT_FALSE(steep.staircase);
  EXPECT_FALSE(steep.segments[1].plateau);
}

TEST(JumpDetector, DenseStaircaseIsStillFound) {
  // A step every 4 sizes (10%, about 13 standard errors) makes a quarter of the differences jumps,
  // which inflates a one-pass noise estimate; the detector re-estimates without them.
  const std::vector<int64_t> positions = {4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68};
  const Noise noise{"2%", 0.02, false};
  int all_found = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const JumpAnalysis a = detect_jumps(measure(staircase(20, 0, positions, 0.1), sizes(1, 70), noise, seed));
    if (from_batches(a.jumps) == positions) ++all_found;
  }
  EXPECT_GE(all_found, 19);
}

TEST(JumpDetector, OneSlowBatchSizeIsASpike) {
  Truth truth = [](double b) { return (5 + 0.3 * b) * (b == 40 ? 1.3 : 1.0); };
  const JumpAnalysis a = detect_jumps(measure(truth, sizes(1, 70), {"0.5%", 0.005, false}, 3));
  EXPECT_EQ(a.spikes, (std::vector<int64_t>{40}));
  EXPECT_TRUE(a.jumps.empty());
  EXPECT_TRUE(a.drops.empty());
  EXPECT_EQ(a.segments.size(), 1u);
}

TEST(JumpDetector, ALowerLevelIsADrop) {
  Truth truth = [](double b) { return (5 + 0.3 * b) * (b > 30 ? 0.85 : 1.0); };
  const JumpAnalysis a = detect_jumps(measure(truth, sizes(1, 70), {"0.5%", 0.005, false}, 4));
  EXPECT_TRUE(a.jumps.empty());
  EXPECT_TRUE(a.spikes.empty());
  ASSERT_EQ(a.drops.size(), 1u);
  EXPECT_EQ(a.drops[0].from_batch, 30);
  EXPECT_EQ(a.drops[0].to_batch, 31);
  EXPECT_LT(a.drops[0].delta_ms, 0);
  EXPECT_NEAR(a.drops[0].delta_pct, -15, 2);
  EXPECT_EQ(a.segments.size(), 2u);
}

TEST(JumpDetector, ClearButTinyChangeIsNotAJump) {
  // 1% is 10 noise sigmas here, but below min_relative.
  const std::vector<LevelPoint> points =
      measure(staircase(10, 0.1, {35}, 0.01), sizes(1, 70), {"0.1%", 0.001, false}, 5);
  EXPECT_TRUE(detect_jumps(points).jumps.empty());
  JumpDetectorOptions sensitive;
  sensitive.min_relative = 0.005;
  EXPECT_EQ(from_batches(detect_jumps(points, sensitive).jumps), (std::vector<int64_t>{35}));
}

TEST(JumpDetector, ConfidenceFollowsZ) {
  const Noise noise{"2%", 0.02, false};
  // 7.5% is about 9.5 difference sigmas: mostly medium; 30% is about 38: high.
  const JumpAnalysis small = detect_jumps(measure(staircase(10, 0.1, {35}, 0.075), sizes(1, 70), noise, 6));
  const JumpAnalysis big = detect_jumps(measure(staircase(10, 0.1, {35}, 0.3), sizes(1, 70), noise, 6));
  ASSERT_EQ(small.jumps.size(), 1u);
  ASSERT_EQ(big.jumps.size(), 1u);
  EXPECT_EQ(small.jumps[0].confidence, small.jumps[0].z >= 10 ? "high" : "medium");
  EXPECT_EQ(big.jumps[0].confidence, "high");
  EXPECT_GE(big.jumps[0].z, 10);
}

struct Shape {
  std::string name;
  Truth truth;
  std::vector<int64_t> batches;
};

// Trends without steps: any jump, drop or spike reported on them is a false positive.
std::vector<Shape> smooth_shapes() {
  return {
      {"flat", [](double) { return 20.0; }, sizes(1, 70)},
      {"line", [](double b) { return 5 + 0.4 * b; }, sizes(1, 70)},
      {"steep", [](double b) { return 1 + 1.0 * b; }, sizes(1, 70)},
      {"sqrt", [](double b) { return 20 + 0.5 * b + 3 * std::sqrt(b); }, sizes(1, 70)},
      // Flat while the GPU is not full, linear after a knee: a soft one at 20, a sharp one at 5.
      {"soft knee", [](double b) { return std::hypot(10.0, 0.5 * b); }, sizes(1, 70)},
      {"sharp knee", [](double b) { return std::max(3.0, 0.6 * b); }, sizes(1, 70)},
      {"line 1:128:4", [](double b) { return 5 + 0.4 * b; }, sizes(1, 128, 4)},
  };
}

constexpr int kFalsePositiveRuns = 200;

TEST(JumpDetectorRates, FalsePositivesOnSmoothTrends) {
  std::cout << "False positives: runs (of " << kFalsePositiveRuns
            << " per cell) reporting any jump, drop or spike\n";
  std::cout << "noise        ";
  for (const Shape& s : smooth_shapes()) std::printf("%13s", s.name.c_str());
  std::cout << "          all\n";
  uint64_t seed = 1000;
  for (const Noise& noise : noise_levels()) {
    std::printf("%-13s", noise.name.c_str());
    int total = 0, runs = 0;
    for (const Shape& shape : smooth_shapes()) {
      int any = 0;
      for (int r = 0; r < kFalsePositiveRuns; ++r) {
        const JumpAnalysis a = detect_jumps(measure(shape.truth, shape.batches, noise, ++seed));
        if (!a.jumps.empty() || !a.drops.empty() || !a.spikes.empty()) ++any;
      }
      std::printf("%13s", percent(static_cast<double>(any) / kFalsePositiveRuns).c_str());
      EXPECT_LE(any, kFalsePositiveRuns / 50) << shape.name << ", " << noise.name;
      total += any;
      runs += kFalsePositiveRuns;
    }
    const double rate = static_cast<double>(total) / runs;
    std::printf("%13s\n", percent(rate).c_str());
    RecordProperty("false_positive_" + noise.name, std::to_string(rate));
    EXPECT_LE(rate, 0.01) << noise.name;
  }
}

struct Scenario {
  std::string name;
  double base, slope;
  std::vector<int64_t> positions;
  std::vector<int64_t> batches;
};

std::vector<Scenario> step_scenarios() {
  return {
      {"every 16", 10, 0.5, {16, 32, 48, 64}, sizes(1, 70)},
      {"irregular", 10, 0.5, {11, 29, 53}, sizes(1, 70)},
      {"near the ends", 10, 0.5, {2, 67}, sizes(1, 70)},
      {"every 16, 1:128:4", 10, 0.5, {16, 32, 48, 64, 80, 96, 112}, sizes(1, 128, 4)},
  };
}

constexpr int kDetectionRuns = 100;
constexpr double kHeights[] = {0.05, 0.10, 0.20, 0.30};

// The smallest of a scenario's steps over the standard error of the difference it shows in: the
// step beyond the slope over sqrt(se_from^2 + se_to^2).
double clearance(const Scenario& sc, double height, double median_se) {
  const Truth truth = staircase(sc.base, sc.slope, sc.positions, height);
  double lowest = std::numeric_limits<double>::infinity();
  for (const auto& [from, to] : expected_pairs(sc.batches, sc.positions)) {
    const double a = truth(static_cast<double>(from)), b = truth(static_cast<double>(to));
    const double step = b - a - sc.slope * static_cast<double>(to - from);
    lowest = std::min(lowest, step / (median_se * std::hypot(a, b)));
  }
  return lowest;
}

struct Tally {
  int steps = 0, found = 0;  // true steps, and of them reported at the right from/to
  int runs = 0, wrong = 0;   // runs, and of them with any jump, drop or spike elsewhere
  int period16 = 0;          // runs judged periodic with k = 16
  double found_rate() const { return steps ? static_cast<double>(found) / steps : 0; }
  double wrong_rate() const { return runs ? static_cast<double>(wrong) / runs : 0; }
  void add(const Tally& o) {
    steps += o.steps, found += o.found, runs += o.runs, wrong += o.wrong, period16 += o.period16;
  }
};

Tally run_scenario(const Scenario& sc, const Noise& noise, double height, uint64_t seed) {
  const auto truth_pairs = expected_pairs(sc.batches, sc.positions);
  const Truth truth = staircase(sc.base, sc.slope, sc.positions, height);
  Tally t;
  for (int r = 0; r < kDetectionRuns; ++r) {
    const JumpAnalysis a = detect_jumps(measure(truth, sc.batches, noise, seed + r));
    ++t.runs;
    t.steps += static_cast<int>(truth_pairs.size());
    for (const auto& [from, to] : truth_pairs) t.found += has_jump(a, from, to) ? 1 : 0;
    const bool elsewhere = std::any_of(a.jumps.begin(), a.jumps.end(), [&](const Jump& j) {
      return std::find(truth_pairs.begin(), truth_pairs.end(), std::make_pair(j.from_batch, j.to_batch)) ==
             truth_pairs.end();
    });
    t.wrong += elsewhere || !a.drops.empty() || !a.spikes.empty() ? 1 : 0;
    const Periodicity p = analyze_periodicity(a.jumps, sc.batches);
    t.period16 += p.periodic && p.best->k == 16 ? 1 : 0;
  }
  return t;
}

// Steps at least this many standard errors of their difference must be found; below it the rates
// are measured and printed, not asserted.
constexpr double kClearRatio = 10;

TEST(JumpDetectorRates, StepsFoundAtTheirPositions) {
  std::vector<double> median_se;
  for (const Noise& noise : noise_levels()) median_se.push_back(median_relative_se(noise));
  // pooled[noise][height]: all scenarios; clear: only cells at kClearRatio or more.
  std::vector<std::vector<Tally>> pooled(noise_levels().size(), std::vector<Tally>(std::size(kHeights)));
  std::vector<Tally> clear(noise_levels().size());
  uint64_t seed = 50000;
  for (const Scenario& sc : step_scenarios()) {
    const bool every16 = sc.positions[0] == 16;
    std::cout << "Steps " << sc.name << ": found at the right from/to, runs with a wrong finding"
              << (every16 ? ", runs periodic with k = 16" : "") << "; (step / SE of its difference)\n";
    for (size_t n = 0; n < noise_levels().size(); ++n) {
      const Noise& noise = noise_levels()[n];
      std::printf("  %-12s", noise.name.c_str());
      for (size_t h = 0; h < std::size(kHeights); ++h) {
        const double ratio = clearance(sc, kHeights[h], median_se[n]);
        const Tally t = run_scenario(sc, noise, kHeights[h], seed += kDetectionRuns);
        std::printf(" %2.0f%%:%s%s", 100 * kHeights[h], percent(t.found_rate()).c_str(),
                    percent(t.wrong_rate()).c_str());
        if (every16) std::printf("%s", percent(static_cast<double>(t.period16) / t.runs).c_str());
        std::printf(" (%3.0f)", ratio);
        pooled[n][h].add(t);
        const std::string where = sc.name + ", " + noise.name + ", h = " + std::to_string(kHeights[h]);
        if (ratio >= kClearRatio) {
          clear[n].add(t);
          EXPECT_GE(t.found_rate(), 0.95) << where;
          if (every16) {
            EXPECT_GE(t.period16, t.runs * 9 / 10) << where;
          }
        }
        // Steps too small to find may be missed, but must not turn up somewhere else.
        EXPECT_LE(t.wrong_rate(), 0.03) << where;
      }
      std::cout << "\n";
    }
  }
  std::cout << "All step scenarios pooled: steps found (runs with a wrong finding) per height\n";
  for (size_t n = 0; n < noise_levels().size(); ++n) {
    std::printf("  %-12s median SE %5.2f%%", noise_levels()[n].name.c_str(), 100 * median_se[n]);
    for (size_t h = 0; h < std::size(kHeights); ++h) {
      std::printf("  %2.0f%%:%s (%s)", 100 * kHeights[h], percent(pooled[n][h].found_rate()).c_str(),
                  percent(pooled[n][h].wrong_rate()).c_str());
      RecordProperty(
          "found_" + noise_levels()[n].name + "_h" + std::to_string(static_cast<int>(100 * kHeights[h])),
          std::to_string(pooled[n][h].found_rate()));
    }
    std::printf("  clear (>= %.0f SE):%s\n", kClearRatio, percent(clear[n].found_rate()).c_str());
  }
}

}  // namespace
}  // namespace batchscope
