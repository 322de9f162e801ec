#include <gtest/gtest.h>

#include <thread>

#include "lib/timing/step_timer.h"

using namespace batchscope;

TEST(HostStepTimer, TimesEachStepOnItsOwn) {
  HostStepTimer timer;
  timer.reserve(3);
  for (int i = 0; i < 3; ++i) {
    timer.start(i);
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * (i + 1)));
    timer.stop(i);
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_GE(timer.elapsed_ms(i), 5.0 * (i + 1));
    EXPECT_LT(timer.elapsed_ms(i), 5.0 * (i + 1) + 200.0);
  }
  EXPECT_LT(timer.elapsed_ms(0), timer.elapsed_ms(2));
}

TEST(HostStepTimer, OverheadOfAnEmptyStepIsTiny) {
  HostStepTimer timer;
  const double overhead = measure_timer_overhead_ms(timer, 100);
  // The clock's own calls take some nanoseconds: a timer that reads nothing (or the same instant
  // twice) gives 0 and fails here.
  EXPECT_GT(overhead, 0.0);
  EXPECT_LT(overhead, 0.1);
}

TEST(StepTimer, CpuDeviceGetsTheHostClock) {
  EXPECT_STREQ(make_step_timer(torch::Device("cpu"))->method(), "steady_clock");
}
