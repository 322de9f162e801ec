#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/jump_detector.h"
#include "lib/analysis/periodicity.h"

namespace batchscope {
namespace {

std::vector<int64_t> measured(int64_t first, int64_t last, int64_t step = 1) {
  std::vector<int64_t> out;
  for (int64_t b = first; b <= last; b += step) out.push_back(b);
  return out;
}

std::vector<Jump> jumps_between(const std::vector<std::pair<int64_t, int64_t>>& steps) {
  std::vector<Jump> out;
  for (const auto& [from, to] : steps) {
    Jump j;
    j.from_batch = from;
    j.to_batch = to;
    out.push_back(j);
  }
  return out;
}

const PeriodCheck& tested(const Periodicity& p, int k) {
  for (const PeriodCheck& c : p.tested) {
    if (c.k == k) return c;
  }
  throw std::logic_error("k = " + std::to_string(k) + " was not tested");
}

// P(X >= hits) for X ~ Binomial(n, q), summed term by term.
double binomial_tail(int n, int hits, double q) {
  double tail = 0;
  for (int x = hits; x <= n; ++x) {
    double choose = 1;
    for (int i = 0; i < x; ++i) choose = choose * (n - i) / (i + 1);
    tail += choose * std::pow(q, x) * std::pow(1 - q, n - x);
  }
  return tail;
}

const std::vector<std::pair<int64_t, int64_t>> kVggSteps = {{16, 17}, {32, 33}, {48, 49}, {64, 65}};

TEST(Periodicity, VggPatternIsPeriodicWithSixteenNotEightOrThirtyTwo) {
  const Periodicity p = analyze_periodicity(jumps_between(kVggSteps), measured(1, 70));
  ASSERT_TRUE(p.best.has_value());
  EXPECT_EQ(p.best->k, 16);
  EXPECT_TRUE(p.periodic);
  EXPECT_EQ(p.best->jumps, 4);
  EXPECT_EQ(p.best->jumps_on_multiples, 4);
  EXPECT_EQ(p.best->multiples_in_range, 4);
  EXPECT_EQ(p.best->multiples_with_jump, 4);
  EXPECT_DOUBLE_EQ(p.best->score, 1.0);
  EXPECT_EQ(
      p.verdict,
      "4 of 4 jumps fall on multiples of 16 (16, 32, 48, 64), and every multiple of 16 in 1\u201370 has "
      "one: periodic with k = 16 (p < 0.001 over 33 periods tried).");

  // Every jump is on a multiple of 8 too, but only half the multiples of 8 have one; 32 explains
  // only half the jumps.
  const PeriodCheck& eight = tested(p, 8);
  EXPECT_EQ(eight.jumps_on_multiples, 4);
  EXPECT_EQ(eight.multiples_in_range, 8);
  EXPECT_EQ(eight.multiples_with_jump, 4);
  EXPECT_NEAR(eight.score, 2.0 / 3.0, 1e-12);
  const PeriodCheck& thirty_two = tested(p, 32);
  EXPECT_EQ(thirty_two.jumps_on_multiples, 2);
  EXPECT_EQ(thirty_two.multiples_in_range, 2);
  EXPECT_NEAR(thirty_two.score, 2.0 / 3.0, 1e-12);
  const PeriodCheck& sixty_four = tested(p, 64);
  EXPECT_EQ(sixty_four.jumps_on_multiples, 1);
  EXPECT_NEAR(sixty_four.score, 0.4, 1e-12);
}

TEST(Periodicity, PValueIsTheBinomialTailOverTheMeasuredSteps) {
  // 4 of the 69 steps in 1..70 cross a multiple of 16.
  const Periodicity all = analyze_periodicity(jumps_between(kVggSteps), measured(1, 70));
  EXPECT_NEAR(tested(all, 16).p_value, std::pow(4.0 / 69, 4), 1e-12);
  EXPECT_NEAR(tested(all, 8).p_value, std::pow(8.0 / 69, 4), 1e-12);

  const Periodicity three =
      analyze_periodicity(jumps_between({{16, 17}, {32, 33}, {40, 41}, {64, 65}}), measured(1, 70));
  EXPECT_NEAR(tested(three, 16).p_value, binomial_tail(4, 3, 4.0 / 69), 1e-12);
  EXPECT_NEAR(tested(three, 64).p_value, binomial_tail(4, 1, 1.0 / 69), 1e-12);
}

TEST(Periodicity, WideGapsRaiseTheChanceOfAHit) {
  // Measured every 4th size up to 125: 15 of the 31 steps cross a multiple of 8, 7 one of 16, and
  // every step one of 4.
  const std::vector<int64_t> sizes = measured(1, 128, 4);
  const auto all = jumps_between({{13, 17}, {29, 33}, {45, 49}, {61, 65}, {77, 81}, {93, 97}, {109, 113}});
  const Periodicity p = analyze_periodicity(all, sizes);
  EXPECT_NEAR(tested(p, 8).p_value, std::pow(15.0 / 31, 7), 1e-12);
  EXPECT_NEAR(tested(p, 16).p_value, std::pow(7.0 / 31, 7), 1e-12);
  ASSERT_TRUE(p.best.has_value());
  EXPECT_EQ(p.best->k, 16);
  EXPECT_EQ(p.best->multiples_in_range, 7);  // 16..112, below 125
  EXPECT_TRUE(p.periodic);

  // Four hits where each step had a 7 in 31 chance is p = 0.0026 for k = 16 alone, but not
  // convincing once 59 periods (those of 2..62 whose multiples two steps cross) have been tried.
  const Periodicity four = analyze_periodicity({all.begin(), all.begin() + 4}, sizes);
  ASSERT_TRUE(four.best.has_value());
  EXPECT_EQ(four.best->k, 16);
  EXPECT_NEAR(four.best->p_value, std::pow(7.0 / 31, 4), 1e-12);
  EXPECT_FALSE(four.periodic);
  EXPECT_EQ(four.verdict,
            "4 of 4 jumps fall on multiples of 16 (16, 32, 48, 64), but with 59 periods tried that is within "
            "chance (p = 0.0026 for k = 16 alone): not periodic.");
}

TEST(Periodicity, EveryEighthSizeIsPeriodicWithEight) {
  const Periodicity p = analyze_periodicity(
      jumps_between({{8, 9}, {16, 17}, {24, 25}, {32, 33}, {40, 41}, {48, 49}, {56, 57}, {64, 65}}),
      measured(1, 70));
  ASSERT_TRUE(p.best.has_value());
  EXPECT_EQ(p.best->k, 8);
  EXPECT_TRUE(p.periodic);
  EXPECT_LT(p.best->p_value, 1e-6);
}

TEST(Periodicity, IrregularJumpsAreNotPeriodic) {
  const Periodicity p = analyze_periodicity(jumps_between({{11, 12}, {29, 30}, {53, 54}}), measured(1, 70));
  EXPECT_FALSE(p.periodic);
  ASSERT_TRUE(p.best.has_value());
  EXPECT_LE(p.best->jumps_on_multiples, 1);
  EXPECT_EQ(p.verdict.rfind("The 3 jumps do not fall on a common multiple (best k = ", 0), 0u) << p.verdict;
}

TEST(Periodicity, NoJumpsSaysSo) {
  const Periodicity p = analyze_periodicity({}, measured(1, 70));
  EXPECT_FALSE(p.periodic);
  EXPECT_FALSE(p.best.has_value());
  EXPECT_EQ(p.verdict, "No jumps: step time follows the trend.");
  ASSERT_EQ(p.tested.size(), 4u);
  for (const PeriodCheck& c : p.tested) {
    EXPECT_EQ(c.p_value, 1);
    EXPECT_EQ(c.score, 0);
  }
  EXPECT_EQ(tested(p, 16).multiples_in_range, 4);
}

TEST(Periodicity, OneJumpIsTooFewForAPeriod) {
  const Periodicity p = analyze_periodicity(jumps_between({{32, 33}}), measured(1, 70));
  EXPECT_FALSE(p.periodic);
  EXPECT_EQ(p.verdict, "One jump (32\u219233): too few to show a period.");
}

TEST(Periodicity, AllOnMultiplesButMostMultiplesEmptyIsNotPeriodic) {
  // Jumps at 8 and 16 only, in a range holding eight multiples of 8.
  const Periodicity p = analyze_periodicity(jumps_between({{8, 9}, {16, 17}}), measured(1, 70));
  EXPECT_FALSE(p.periodic);
  EXPECT_EQ(p.verdict,
            "2 of 2 jumps fall on multiples of 8 (8, 16), but only 2 of the 8 steps across its multiples in "
            "1\u201370 have one: "
            "not periodic.");
}

TEST(Periodicity, RejectsUnsortedSizes) {
  EXPECT_THROW(analyze_periodicity({}, {1, 3, 2}), std::invalid_argument);
}

TEST(Periodicity, FromDetectedJumpsOfANoiseFreeVggCurve) {
  std::vector<LevelPoint> points;
  for (int64_t b = 1; b <= 70; ++b) {
    const double tiles = std::ceil(static_cast<double>(b) / 16);  // work padded to tiles of 16
    points.push_back({b, 4 + 0.2 * static_cast<double>(b) + 3 * tiles, 0});
  }
  const JumpAnalysis a = detect_jumps(points);
  const Periodicity p = analyze_periodicity(a.jumps, measured(1, 70));
  ASSERT_TRUE(p.best.has_value());
  EXPECT_EQ(p.best->k, 16);
  EXPECT_TRUE(p.periodic);
}

// Jumps at random steps: how often is a period claimed? Under the null each tested k's p-value
// should be below 0.05 at most about 5% of the time (less: the binomial test is discrete).
TEST(Periodicity, RandomJumpsRarelyLookPeriodic) {
  std::mt19937_64 engine(2024);
  const std::vector<int64_t> sizes = measured(1, 70);
  constexpr int kRuns = 1000;
  int periodic = 0, p16_below = 0;
  for (int r = 0; r < kRuns; ++r) {
    std::vector<int64_t> froms;
    while (froms.size() < 4) {
      const auto from = static_cast<int64_t>(1 + engine() % 69);
      if (std::find(froms.begin(), froms.end(), from) == froms.end()) froms.push_back(from);
    }
    std::sort(froms.begin(), froms.end());
    std::vector<std::pair<int64_t, int64_t>> steps;
    for (int64_t f : froms) steps.emplace_back(f, f + 1);
    const Periodicity p = analyze_periodicity(jumps_between(steps), sizes);
    periodic += p.periodic ? 1 : 0;
    p16_below += tested(p, 16).p_value < 0.05 ? 1 : 0;
  }
  EXPECT_LE(p16_below, kRuns * 6 / 100) << "runs of " << kRuns << " with p(k=16) < 0.05";
  EXPECT_LE(periodic, kRuns / 100) << "runs of " << kRuns << " judged periodic";
}

std::vector<LevelPoint> curve(int64_t first, int64_t last, const std::function<double(int64_t)>& ms) {
  std::vector<LevelPoint> out;
  for (int64_t b = first; b <= last; ++b) out.push_back({b, ms(b), 0.0});
  return out;
}

// A copy, not a pointer: the tests often ask of a temporary result.
std::optional<RisesAfterMultiples> after(const std::vector<RisesAfterMultiples>& all, int k) {
  for (const RisesAfterMultiples& r : all)
    if (r.k == k) return r;
  return std::nullopt;
}

// The one-sided p of the steps after multiples of 16, or 2 (no p can be) where none were ranked.
double p_after_16(const std::vector<LevelPoint>& points) {
  const auto r16 = after(rises_after_multiples(points), 16);
  return r16 ? r16->p_value : 2.0;
}

TEST(RisesAfterMultiples, AreRankedAmongAllStepsWithAnExactChance) {
  // 1..33: every step rises by 1 ms except 16 -> 17 (+6) and 32 -> 33 (+8), the two largest of 32 steps.
  // A pair drawn at random is those two once in C(32, 2) = 496 draws.
  const auto points = curve(1, 33, [](int64_t b) { return 10.0 + b + (b > 16 ? 5 : 0) + (b > 32 ? 7 : 0); });
  const auto all = rises_after_multiples(points);
  const auto r16 = after(all, 16);
  ASSERT_TRUE(r16.has_value());
  EXPECT_EQ(r16->steps, 32);
  ASSERT_EQ(r16->rises.size(), 2u);
  EXPECT_EQ(r16->rises[0].first, 16);
  EXPECT_NEAR(r16->rises[0].second, 5.0 / 26.0, 1e-9);  // beyond the typical 1 ms, of 26 ms (to 1e-9)
  EXPECT_EQ(r16->rises[1].first, 32);
  EXPECT_NEAR(r16->p_value, 1.0 / 496.0, 1e-12);
  EXPECT_NEAR(r16->mean_percentile, 100.0 * (30.5 / 31.0), 1e-9);  // ranks 32 and 31 of 32
  EXPECT_FALSE(after(all, 32).has_value()) << "one step after a multiple of 32 is too few to rank";
}

TEST(RisesAfterMultiples, TellTheBlogsPatternFromNoise) {
  std::mt19937_64 engine(7);
  std::normal_distribution<double> noise(0.0, 0.3);
  // A linear step with noise, and the same with a rise of 3 ms after every multiple of 16 (the blog's
  // staircase), on 1..70 as the campaign sweeps.
  std::vector<double> jitter;
  for (int i = 0; i < 70; ++i) jitter.push_back(noise(engine));
  const auto plain = curve(1, 70, [&](int64_t b) { return 4.0 + 0.7 * b + jitter[b - 1]; });
  const auto stairs =
      curve(1, 70, [&](int64_t b) { return 4.0 + 0.7 * b + 3.0 * ((b - 1) / 16) + jitter[b - 1]; });
  const auto with = after(rises_after_multiples(stairs), 16);
  ASSERT_TRUE(with.has_value());
  EXPECT_LT(with->p_value, 0.01);
  EXPECT_GE(with->mean_percentile, 90);
  ASSERT_EQ(with->rises.size(), 4u);
  EXPECT_EQ(with->rises.back().first, 64);
  EXPECT_GT(p_after_16(plain), 0.01);
  EXPECT_LE(p_after_16(plain), 1.0);
  // Past 100 steps the normal approximation: a staircase on 1..400 is still told from the plain line.
  const auto long_stairs =
      curve(1, 400, [](int64_t b) { return 4.0 + 0.7 * b + 3.0 * ((b - 1) / 16) + 0.1 * std::sin(b); });
  EXPECT_LT(p_after_16(long_stairs), 1e-6);
  const auto long_plain = curve(1, 400, [](int64_t b) { return 4.0 + 0.7 * b + 0.1 * std::sin(b); });
  EXPECT_GT(p_after_16(long_plain), 0.01);
  EXPECT_LE(p_after_16(long_plain), 1.0);
  // Steps wider than one size are not ranked: a doubling ladder has none.
  std::vector<LevelPoint> doubling;
  for (int64_t b = 1; b <= 1024; b *= 2) doubling.push_back({b, 1.0 + b, 0.0});
  EXPECT_TRUE(rises_after_multiples(doubling).empty());
}

}  // namespace
}  // namespace batchscope
