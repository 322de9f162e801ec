#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>

#include "lib/sweep/progress.h"

using namespace batchscope;

TEST(ProgressEstimate, NothingRunIsNoEstimate) {
  EXPECT_FALSE(estimate_remaining_s({}, {{"a", 8, 10}}).has_value());
}

TEST(ProgressEstimate, FollowsTheLineThroughTheSizesRun) {
  // 0.1 s + 0.01 s per sample for a step: sizes 1 and 10 run, 20 and 30 left with 10 steps each.
  const std::map<std::string, std::vector<ProgressSample>> seen = {{"a", {{1, 0.11}, {10, 0.20}}}};
  const auto left = estimate_remaining_s(seen, {{"a", 20, 10}, {"a", 30, 10}});
  ASSERT_TRUE(left.has_value());
  EXPECT_NEAR(*left, 10 * 0.30 + 10 * 0.40, 1e-9);
}

TEST(ProgressEstimate, OneSizeRunScalesWithTheBatchSize) {
  const std::map<std::string, std::vector<ProgressSample>> seen = {{"a", {{4, 0.2}}}};
  EXPECT_NEAR(*estimate_remaining_s(seen, {{"a", 8, 5}}), 5 * 0.4, 1e-9);
}

TEST(ProgressEstimate, AnExperimentNotStartedGoesAtTheSweepsMeanRatePerSample) {
  // "a" took 1 s a step at batch 10: 0.1 s per sample-step; "b" has not run.
  const std::map<std::string, std::vector<ProgressSample>> seen = {{"a", {{10, 1.0}}}};
  EXPECT_NEAR(*estimate_remaining_s(seen, {{"b", 2, 3}}), 3 * 0.2, 1e-9);
}

TEST(ProgressEstimate, ALineBelowZeroTakesTheNearestSizeRun) {
  // Falling with the batch size (noise): extrapolating to 100 would go below zero.
  const std::map<std::string, std::vector<ProgressSample>> seen = {{"a", {{1, 0.5}, {2, 0.4}}}};
  EXPECT_NEAR(*estimate_remaining_s(seen, {{"a", 100, 1}}), 0.4, 1e-9);
}

TEST(ProgressLine, MovesBetweenStepsThrottledAndLearnsFromTheSizeRunning) {
  std::ostringstream out;
  Progress progress(out, /*enabled=*/true);
  progress.begin_sweep({{"a", 1, 6}, {"a", 2, 6}});
  progress.begin_size("a", 1, 1, 1, 1, 5);
  EXPECT_NE(out.str().find("warm-up 0/1"), std::string::npos) << out.str();
  const StepObserver& tell = progress.observer();
  tell(StepPart::WarmUp, 1, 1);
  tell(StepPart::Timed, 1, 5);
  // Within 0.25 s of the last drawing nothing is drawn.
  EXPECT_EQ(out.str().find("step 1/5"), std::string::npos) << out.str();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  tell(StepPart::Timed, 2, 5);
  EXPECT_NE(out.str().find("step 2/5"), std::string::npos) << out.str();
  // Learned from the running size's own steps: 3 of 6 took 0.3 s or more, so 3 more take as long
  // (size 2 has nothing to go by yet).
  const auto left = progress.remaining_s();
  ASSERT_TRUE(left.has_value());
  EXPECT_GE(*left, 0.29);
  EXPECT_NE(out.str().find("remaining ~"), std::string::npos) << out.str();
  progress.end_size("a", 1, 6, /*measured=*/true);
  // Size 2 is left: 6 steps, each twice a step of size 1 (one size run: proportional), which took
  // 0.3 s or more for its 6.
  const auto after = progress.remaining_s();
  ASSERT_TRUE(after.has_value());
  EXPECT_GE(*after, 0.9 * 6 * 2 * (0.3 / 6));
  progress.end_size("a", 2, 6, /*measured=*/false);
  EXPECT_DOUBLE_EQ(progress.remaining_s().value_or(-1), 0.0);
}

TEST(ProgressLine, AutoStepsShowTheStepsPlannedAndStretchTheEstimate) {
  std::ostringstream out;
  Progress progress(out, /*enabled=*/true);
  // Planned at 1 warm-up and 10 timed steps a size (steps: auto's first block).
  progress.begin_sweep({{"a", 1, 11}, {"a", 2, 11}});
  progress.begin_size("a", 1, 1, 1, 1, 10);
  const StepObserver& tell = progress.observer();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // A second block took the plan to 40 steps.
  tell(StepPart::Timed, 25, 40);
  EXPECT_NE(out.str().find("step 25/40"), std::string::npos) << out.str();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  progress.end_size("a", 1, 41, /*measured=*/true);
  // Size 1 took 41 steps where 11 were planned: size 2's 11 planned steps count as 41, each twice as
  // long as one of size 1's (0.4 s or more over 41 steps).
  const auto left = progress.remaining_s();
  ASSERT_TRUE(left.has_value());
  EXPECT_GE(*left, 0.9 * 41 * 2 * (0.4 / 41));
}

TEST(ProgressLine, DisabledWritesNothing) {
  std::ostringstream out;
  Progress progress(out, /*enabled=*/false);
  progress.begin_sweep({{"a", 1, 2}});
  progress.begin_size("a", 1, 1, 1, 1, 1);
  progress.observer()(StepPart::WarmUp, 1, 1);
  progress.end_size("a", 1, 2, true);
  progress.finish();
  EXPECT_TRUE(out.str().empty());
}
