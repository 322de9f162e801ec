#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "lib/training/lr_schedule.h"

namespace batchscope {
namespace {

TEST(LrSchedule, AWarmUpRisesByTheSameAmountEachStepFromTheReferenceRateToTheRunsOwn) {
  LrSchedule s;
  s.warmup_epochs = 2;
  s.warmup_from = 0.01;
  // Two epochs of 4 steps: 8 steps of warm-up, the run's 0.08 from the ninth.
  EXPECT_DOUBLE_EQ(lr_at(s, 0.08, 0, 4, 10), 0.01);
  EXPECT_DOUBLE_EQ(lr_at(s, 0.08, 4, 4, 10), 0.045);
  EXPECT_DOUBLE_EQ(lr_at(s, 0.08, 7, 4, 10), 0.01 + 0.07 * 7 / 8);
  EXPECT_DOUBLE_EQ(lr_at(s, 0.08, 8, 4, 10), 0.08);
  EXPECT_DOUBLE_EQ(lr_at(s, 0.08, 39, 4, 10), 0.08);
  for (int64_t step = 1; step < 8; ++step) {
    EXPECT_NEAR(lr_at(s, 0.08, step, 4, 10) - lr_at(s, 0.08, step - 1, 4, 10), 0.07 / 8, 1e-15);
  }
  EXPECT_FALSE(s.constant());
  EXPECT_FALSE(s.depends_on_epochs());
  EXPECT_TRUE(LrSchedule{}.constant());
  EXPECT_DOUBLE_EQ(lr_at(LrSchedule{}, 0.3, 123, 4, 10), 0.3);
}

TEST(LrSchedule, StepsDownAfterEachMilestoneEpoch) {
  LrSchedule s;
  ASSERT_TRUE(read_lr_decay("step:2,3", s));
  // Epochs of 4 steps: epochs 1 and 2 at the rate, epoch 3 a tenth of it, epoch 4 on a hundredth.
  EXPECT_DOUBLE_EQ(lr_at(s, 0.5, 0, 4, 5), 0.5);
  EXPECT_DOUBLE_EQ(lr_at(s, 0.5, 7, 4, 5), 0.5);
  EXPECT_DOUBLE_EQ(lr_at(s, 0.5, 8, 4, 5), 0.05);
  EXPECT_DOUBLE_EQ(lr_at(s, 0.5, 11, 4, 5), 0.05);
  EXPECT_DOUBLE_EQ(lr_at(s, 0.5, 12, 4, 5), 0.5 * 0.1 * 0.1);
  EXPECT_DOUBLE_EQ(lr_at(s, 0.5, 400, 4, 5), 0.5 * 0.1 * 0.1) << "past the last epoch as in it";
  // After a warm-up the steps apply as they would without it.
  s.warmup_epochs = 1;
  s.warmup_from = 0.1;
  EXPECT_DOUBLE_EQ(lr_at(s, 0.5, 0, 4, 5), 0.1);
  EXPECT_DOUBLE_EQ(lr_at(s, 0.5, 4, 4, 5), 0.5);
  EXPECT_DOUBLE_EQ(lr_at(s, 0.5, 8, 4, 5), 0.05);
}

TEST(LrSchedule, ACosineFallsFromTheRateToZeroAtTheLastEpochAndDependsOnItsCount) {
  LrSchedule s;
  ASSERT_TRUE(read_lr_decay("cosine", s));
  EXPECT_TRUE(s.depends_on_epochs());
  // 4 epochs of 5 steps: the rate at the first step, half of it half-way, nearly none at the last.
  EXPECT_DOUBLE_EQ(lr_at(s, 0.2, 0, 5, 4), 0.2);
  EXPECT_NEAR(lr_at(s, 0.2, 10, 5, 4), 0.1, 1e-15);
  EXPECT_GT(lr_at(s, 0.2, 19, 5, 4), 0);
  EXPECT_LT(lr_at(s, 0.2, 19, 5, 4), 0.002);
  for (int64_t step = 1; step < 20; ++step)
    EXPECT_LT(lr_at(s, 0.2, step, 5, 4), lr_at(s, 0.2, step - 1, 5, 4));
  EXPECT_NE(lr_at(s, 0.2, 10, 5, 4), lr_at(s, 0.2, 10, 5, 8)) << "another count of epochs, other rates";
  // After a warm-up of one epoch the cosine starts at the run's rate and spans the rest.
  s.warmup_epochs = 1;
  s.warmup_from = 0.05;
  EXPECT_DOUBLE_EQ(lr_at(s, 0.2, 0, 5, 4), 0.05);
  EXPECT_DOUBLE_EQ(lr_at(s, 0.2, 5, 5, 4), 0.2);
  EXPECT_NEAR(lr_at(s, 0.2, 12, 5, 4), 0.5 * 0.2 * (1 + std::cos(M_PI * 7 / 15)), 1e-15);
}

TEST(LrSchedule, ReadsItsDecayWordsAndWritesThemBack) {
  for (const std::string text : {"none", "cosine", "step:30,60", "step:5", "step:1,2,3"}) {
    LrSchedule s;
    ASSERT_TRUE(read_lr_decay(text, s)) << text;
    EXPECT_EQ(lr_decay_text(s), text);
  }
  LrSchedule s;
  ASSERT_TRUE(read_lr_decay("step:30,60", s));
  EXPECT_EQ(s.milestones, (std::vector<int>{30, 60}));
  for (const std::string bad : {"", "step:", "step:60,30", "step:0", "step:3,3", "step:a", "step:30,", "cos",
                                "step:,30", "step:-1", "linear", "step:30;60"}) {
    LrSchedule kept;
    ASSERT_TRUE(read_lr_decay("step:7", kept));
    EXPECT_FALSE(read_lr_decay(bad, kept)) << "'" << bad << "'";
    EXPECT_EQ(kept.milestones, std::vector<int>{7}) << "a refused word leaves the schedule as it was";
  }
  s.warmup_epochs = 5;
  s.warmup_from = 0.01;
  EXPECT_EQ(describe(s), "warmed up over 5 epochs from 0.01, then times 0.1 after epochs 30 and 60");
  EXPECT_EQ(describe(LrSchedule{}), "");
  LrSchedule cosine;
  read_lr_decay("cosine", cosine);
  EXPECT_EQ(describe(cosine), "cosine to 0 at the last epoch");
  const auto j = lr_schedule_json(s);
  EXPECT_EQ(j["warmup_epochs"], 5);
  EXPECT_EQ(j["warmup_from"], 0.01);
  EXPECT_EQ(j["decay"], "step");
  EXPECT_EQ(j["milestones"], nlohmann::ordered_json({30, 60}));
  EXPECT_EQ(j["gamma"], 0.1);
}

}  // namespace
}  // namespace batchscope
