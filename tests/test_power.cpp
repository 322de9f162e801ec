#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "lib/device/gpu.h"
#include "lib/power/energy_meter.h"
#include "lib/power/nvml_source.h"
#include "lib/power/rapl_source.h"
#include "tests/fake_power_source.h"

using namespace batchscope::power;
using batchscope::power::testing::FakePowerSource;
using batchscope::power::testing::PowerCurve;
namespace fs = std::filesystem;

namespace {

void sleep_ms(double ms) { std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms)); }

}  // namespace

TEST(IntegratePower, NeedsTwoSamples) {
  EXPECT_EQ(integrate_power({}), 0.0);
  EXPECT_EQ(integrate_power({{5.0, 300.0}}), 0.0);
}

TEST(IntegratePower, ExactForConstantPower) {
  // 50 W for 2 s, read at uneven times.
  EXPECT_DOUBLE_EQ(integrate_power({{0.0, 50.0}, {300.0, 50.0}, {1700.0, 50.0}, {2000.0, 50.0}}), 100.0);
}

TEST(IntegratePower, ExactForLinearPower) {
  // P = 10 W + 0.05 W/ms * t over 1 s: 10 J + 0.05 * 1000^2 / 2 / 1000 J = 35 J, whatever the spacing.
  std::vector<std::pair<double, double>> samples;
  for (double t : {0.0, 1.0, 250.0, 251.5, 600.0, 999.0, 1000.0}) samples.emplace_back(t, 10 + 0.05 * t);
  EXPECT_NEAR(integrate_power(samples), 35.0, 1e-9);
}

// A counter that moves only every 10 ms, read through a clock the test sets. Power rises from
// 100 W by 20 W a second. Reading the counter at time t gives the energy at the last multiple of
// the step before t, so each edge of a window is off by at most one step of energy, and the
// difference by at most step * (the highest power in the window).
class QuantisedCounter : public ::testing::Test {
 protected:
  double now_ms_ = 0;
  FakePowerSource source_{PowerCurve::linear(100, 20), [this] { return now_ms_; }, kStepMs};
  EnergyMeter meter_{source_, 10, [this] { return now_ms_; }};
  static constexpr double kStepMs = 10;

  // Measures the window [from, to] and returns (measured, true) joules; checks the bound.
  std::pair<double, double> measure(double from_ms, double to_ms) {
    now_ms_ = from_ms;
    meter_.begin();
    now_ms_ = to_ms;
    const EnergyWindow w = meter_.end();
    EXPECT_FALSE(meter_.sampled());
    EXPECT_EQ(w.method, "fake energy counter");
    EXPECT_EQ(w.power_samples, 0);
    EXPECT_DOUBLE_EQ(w.window_ms, to_ms - from_ms);
    EXPECT_NEAR(w.avg_power_w, w.joules / ((to_ms - from_ms) / 1000), 1e-9);
    const double truth = source_.joules_between(from_ms, to_ms);
    const double bound = kStepMs / 1000 * (100 + 20 * to_ms / 1000);
    EXPECT_LE(std::abs(w.joules - truth), bound);
    return {w.joules, truth};
  }
};

TEST_F(QuantisedCounter, LongWindowMatchesTheIntegral) {
  // 10 s from t = 1.0037 s: about 1200 J, with at most 3.2 J of quantisation.
  const auto [measured, truth] = measure(1003.7, 11007.3);
  EXPECT_NEAR(truth, 100 * 10.0036 + 10 * (11.0073 * 11.0073 - 1.0037 * 1.0037), 1e-6);
  EXPECT_LT(std::abs(measured - truth) / truth, 0.003);
  EXPECT_NE(measured, truth);  // the counter's steps are visible, the bound does the work
}

TEST_F(QuantisedCounter, WindowShorterThanAStepCanBeEntirelyWrong) {
  // Inside one step the counter does not move: 0 J measured for about 0.6 J spent.
  const auto [none, spent] = measure(1001.0, 1006.0);
  EXPECT_EQ(none, 0.0);
  EXPECT_GT(spent, 0.5);
  // Across a step edge it jumps by a whole step: about 1.2 J measured for 0.024 J spent.
  const auto [jump, little] = measure(1009.9, 1010.1);
  EXPECT_NEAR(jump, source_.joules_between(1000, 1010), 1e-9);
  EXPECT_GT(jump / little, 40.0);
}

TEST_F(QuantisedCounter, CounterLostMidWindowThrows) {
  now_ms_ = 100;
  meter_.begin();
  source_.break_counter();
  now_ms_ = 5000;
  try {
    meter_.end();
    FAIL() << "end() returned although the counter could not be read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("energy counter of fake device"), std::string::npos) << e.what();
  }
}

// The real clock, remembering its first and last reading: the edges of a meter's window.
class WindowClock {
 public:
  Clock clock() {
    return [this] {
      const double now = steady_now_ms();
      std::lock_guard<std::mutex> lock(mutex_);
      if (first_ < 0) first_ = now;
      last_ = now;
      return now;
    };
  }
  double first() const { return first_; }
  double last() const { return last_; }

 private:
  std::mutex mutex_;
  double first_ = -1, last_ = -1;
};

TEST(SampledEnergy, MatchesTheIntegralOfAKnownCurve) {
  // 100 W +- 50 W in a 300 ms sine, read every 5 ms for 300 ms on the real clock. A sine no
  // faster keeps the trapezoids close even when a busy machine delays the sampler by tens of ms.
  FakePowerSource source(PowerCurve::sine(100, 50, 300), steady_now_ms, 0);
  WindowClock window_clock;
  EnergyMeter meter(source, 5, window_clock.clock());
  meter.begin();
  EXPECT_TRUE(meter.sampled());
  sleep_ms(300);
  const EnergyWindow w = meter.end();
  const double truth = source.joules_between(window_clock.first() - source.origin_ms(),
                                             window_clock.last() - source.origin_ms());
  EXPECT_EQ(w.method, "fake power samples");
  EXPECT_GT(w.power_samples, 10);
  EXPECT_LE(w.power_samples, source.power_reads());
  EXPECT_GE(w.window_ms, 300.0);
  EXPECT_DOUBLE_EQ(w.window_ms, window_clock.last() - window_clock.first());
  EXPECT_NEAR(w.joules, truth, 0.05 * truth);
  EXPECT_NEAR(w.avg_power_w, w.joules / (w.window_ms / 1000), 1e-9);
}

TEST(SampledEnergy, NoPowerReadingsThrows) {
  FakePowerSource source(PowerCurve::constant(10), steady_now_ms, 0);
  source.break_power();
  EnergyMeter meter(source, 5);
  meter.begin();
  sleep_ms(20);
  EXPECT_THROW(meter.end(), std::runtime_error);
}

TEST(PowerSampler, ReadsEveryPeriodOnTheInjectedClock) {
  FakePowerSource source(PowerCurve::constant(7), steady_now_ms, 0);
  PowerSampler sampler(source, 5, [] { return steady_now_ms() + 1e6; });
  const double started = steady_now_ms();
  sampler.start();
  sleep_ms(100);
  const auto samples = sampler.stop();
  const double elapsed = steady_now_ms() - started;
  // A reading at start and stop, one per period between, and never faster than the period.
  ASSERT_GE(samples.size(), 5u);
  EXPECT_LE(samples.size(), 3 + static_cast<std::size_t>(elapsed / 5));
  for (std::size_t i = 0; i < samples.size(); ++i) {
    EXPECT_GE(samples[i].first, 1e6);
    EXPECT_EQ(samples[i].second, 7.0);
    if (i > 0) {
      EXPECT_GE(samples[i].first, samples[i - 1].first);
    }
  }
  // Stopped: the source is left alone, and a second stop() gives the same readings.
  const int reads = source.power_reads();
  sleep_ms(20);
  EXPECT_EQ(source.power_reads(), reads);
  EXPECT_EQ(sampler.stop(), samples);
  // A restart begins a new series.
  sampler.start();
  const auto again = sampler.stop();
  ASSERT_GE(again.size(), 2u);
  EXPECT_GT(again.front().first, samples.back().first);
}

TEST(PowerSampler, StopsWithoutWaitingOutALongPeriod) {
  FakePowerSource source(PowerCurve::constant(1), steady_now_ms, 0);
  const double started = steady_now_ms();
  {
    PowerSampler unstarted(source, 10000);
    EXPECT_TRUE(unstarted.stop().empty());
  }
  {
    PowerSampler stopped(source, 10000);
    stopped.start();
    EXPECT_EQ(stopped.stop().size(), 2u);
  }
  {
    PowerSampler destroyed_running(source, 10000);
    destroyed_running.start();
  }
  EXPECT_LT(steady_now_ms() - started, 1000.0);
}

TEST(MeasureIdle, ConstantPowerComesBack) {
  FakePowerSource sampled(PowerCurve::constant(42), steady_now_ms, 0);
  const EnergyWindow s = measure_idle(sampled, 0.1);
  EXPECT_GE(s.window_ms, 100.0);
  EXPECT_NEAR(s.avg_power_w, 42.0, 1e-9);  // the window's edges take the nearest reading
  EXPECT_GE(s.power_samples, 2);

  // A counter of 1 ms steps is off by at most 1 ms of energy over the window (plus the few
  // microseconds between reading the clock and the counter).
  FakePowerSource counter(PowerCurve::constant(42), steady_now_ms, 1);
  const EnergyWindow c = measure_idle(counter, 0.1);
  EXPECT_GE(c.window_ms, 100.0);
  EXPECT_NEAR(c.avg_power_w, 42.0, 42.0 * 1.1 / c.window_ms);
  EXPECT_EQ(c.power_samples, 0);
}

// A powercap tree in a temporary directory: two packages, a subzone, an MMIO zone and a psys zone.
class FakePowercap : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "batchscope-powercap-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    zone("intel-rapl:0", "package-0", 1000000, 262143328850);
    zone("intel-rapl:1", "package-1", 999900000, 1000000000);  // 0.1 J below the top of its range
    zone("intel-rapl:0:0", "core", 10, 262143328850);
    zone("intel-rapl-mmio:0", "package-0", 10, 262143328850);
    zone("intel-rapl:2", "psys", 10, 262143328850);
  }
  void TearDown() override { fs::remove_all(root_); }

  void zone(const std::string& dir, const std::string& name, uint64_t energy_uj, uint64_t range_uj) {
    fs::create_directories(root_ / dir);
    write(dir + "/name", name + "\n");
    write(dir + "/max_energy_range_uj", std::to_string(range_uj) + "\n");
    set_energy(dir, energy_uj);
  }
  void set_energy(const std::string& dir, uint64_t uj) {
    write(dir + "/energy_uj", std::to_string(uj) + "\n");
  }
  void write(const std::string& file, const std::string& text) { std::ofstream(root_ / file) << text; }
  std::unique_ptr<PowerSource> open() {
    auto source = open_rapl_source(reason_, root_.string());
    EXPECT_TRUE(source) << reason_;
    return source;
  }

  fs::path root_;
  std::string reason_;
};

TEST_F(FakePowercap, SumsThePackagesOnly) {
  auto rapl = open();
  ASSERT_TRUE(rapl);
  EXPECT_EQ(rapl->method(), "rapl");
  EXPECT_EQ(rapl->scope(), "CPU packages package-0, package-1");
  EXPECT_EQ(rapl->resolution_ms(), 1.0);
  const auto info = rapl->info();
  ASSERT_EQ(info["packages"].size(), 2u);
  EXPECT_EQ(info["packages"][1]["name"], "package-1");
  EXPECT_EQ(info["packages"][1]["max_energy_range_uj"], 1000000000u);
  EXPECT_EQ(rapl->energy_j(), 0.0);

  set_energy("intel-rapl:0", 3500000);    // +2.5 J
  set_energy("intel-rapl:1", 999950000);  // +0.05 J
  for (const char* ignored : {"intel-rapl:0:0", "intel-rapl-mmio:0", "intel-rapl:2"})
    set_energy(ignored, 9000000000);
  EXPECT_NEAR(*rapl->energy_j(), 2.55, 1e-9);
}

TEST_F(FakePowercap, UndoesWrapArounds) {
  auto rapl = open();
  ASSERT_TRUE(rapl);
  // package-1 runs past 1e9 uJ and starts again: (1e9 - 999900000) + 1 + 100000 uJ.
  set_energy("intel-rapl:1", 100000);
  EXPECT_NEAR(*rapl->energy_j(), 0.200001, 1e-9);
  set_energy("intel-rapl:1", 300000);
  EXPECT_NEAR(*rapl->energy_j(), 0.400001, 1e-9);
}

TEST_F(FakePowercap, ReadsOftenEnoughForTheSmallestRange) {
  auto rapl = open();
  ASSERT_TRUE(rapl);
  // package-1's 1000 J last 1 s at 1000 W; it is read twice in that time.
  EXPECT_DOUBLE_EQ(rapl->read_every_ms(), 500.0);
}

// One long step: nothing calls the meter between begin() and end(), and package-1's counter wraps
// three times. The meter's own thread reads it often enough to see every wrap-around.
TEST_F(FakePowercap, AWindowsOwnThreadSeesEveryWrapAroundInOneLongStep) {
  write("intel-rapl:1/max_energy_range_uj", "20000000\n");  // 20 J: read every 10 ms
  set_energy("intel-rapl:1", 19900000);                     // 0.1 J below the top
  auto rapl = open();
  ASSERT_TRUE(rapl);
  ASSERT_DOUBLE_EQ(rapl->read_every_ms(), 10.0);
  EnergyMeter meter(*rapl);
  meter.begin();
  const uint64_t readings[] = {10000000, 19000000, 2000000, 18000000, 1000000};
  for (const uint64_t uj : readings) {
    set_energy("intel-rapl:1", uj);
    // Two reads finished after the write: the second began after it.
    const int64_t before = meter.watch_reads();
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (meter.watch_reads() < before + 2 && std::chrono::steady_clock::now() < give_up) sleep_ms(1);
    ASSERT_GE(meter.watch_reads(), before + 2) << "the watching thread stopped reading";
  }
  set_energy("intel-rapl:1", 3000000);
  const EnergyWindow window = meter.end();
  EXPECT_EQ(meter.watch_reads(), 0);  // its thread ended with the window
  // 0.1 J + 1 uJ to the first wrap, then three climbs through the range less what each left, 3 J after.
  const double expected =
      (20e6 - 19900000 + 1 + 19000000 + (20e6 - 19000000) + 1 + 18000000 + (20e6 - 18000000) + 1 + 3000000) /
      1e6;
  EXPECT_NEAR(window.joules, expected, 1e-6);
  EXPECT_GT(window.joules, 40.0);
}

TEST(CounterWatch, OnlyACounterThatWrapsIsWatched) {
  FakePowerSource counter(PowerCurve::constant(10), steady_now_ms, 1);  // never wraps
  EnergyMeter meter(counter);
  meter.begin();
  sleep_ms(5);
  EXPECT_EQ(meter.watch_reads(), 0);
  EXPECT_GT(meter.end().joules, 0.0);
}

TEST_F(FakePowercap, PowerIsTheEnergyRateSinceTheLastCall) {
  const double before_open = steady_now_ms();
  auto rapl = open();
  ASSERT_TRUE(rapl);
  const double after_open = steady_now_ms();
  set_energy("intel-rapl:0", 3000000);  // +2 J
  sleep_ms(20);
  const double before_call = steady_now_ms();
  const auto watts = rapl->power_w();
  const double after_call = steady_now_ms();
  ASSERT_TRUE(watts);
  EXPECT_GE(*watts, 2 / ((after_call - before_open) / 1000) - 1e-9);
  EXPECT_LE(*watts, 2 / ((before_call - after_open) / 1000) + 1e-9);
  const Telemetry t = rapl->telemetry();
  EXPECT_FALSE(t.sm_clock_mhz || t.memory_clock_mhz || t.temperature_c || t.utilization_pct);
}

TEST_F(FakePowercap, CounterLostMidWindowThrows) {
  auto rapl = open();
  ASSERT_TRUE(rapl);
  EnergyMeter meter(*rapl);
  meter.begin();
  fs::remove(root_ / "intel-rapl:1/energy_uj");
  EXPECT_FALSE(rapl->energy_j());
  EXPECT_THROW(meter.end(), std::runtime_error);
}

TEST_F(FakePowercap, MissingTreeNamesTheDirectory) {
  const std::string missing = (root_ / "no-such-powercap").string();
  EXPECT_FALSE(open_rapl_source(reason_, missing));
  EXPECT_NE(reason_.find(missing), std::string::npos) << reason_;
  EXPECT_NE(reason_.find("intel-rapl:N"), std::string::npos) << reason_;
}

TEST_F(FakePowercap, TreeWithoutPackageZonesIsRefused) {
  fs::remove_all(root_ / "intel-rapl:0");
  fs::remove_all(root_ / "intel-rapl:1");
  EXPECT_FALSE(open_rapl_source(reason_, root_.string()));
  EXPECT_NE(reason_.find("no RAPL package zones"), std::string::npos) << reason_;
}

TEST_F(FakePowercap, UnreadableEnergyIsRefused) {
  // Tests may run as root, which reads any file; a missing file or a directory stands in.
  fs::remove(root_ / "intel-rapl:1/energy_uj");
  EXPECT_FALSE(open_rapl_source(reason_, root_.string()));
  EXPECT_NE(reason_.find((root_ / "intel-rapl:1/energy_uj").string()), std::string::npos) << reason_;
  EXPECT_NE(reason_.find("No such file"), std::string::npos) << reason_;

  fs::create_directory(root_ / "intel-rapl:1/energy_uj");
  EXPECT_FALSE(open_rapl_source(reason_, root_.string()));
  EXPECT_NE(reason_.find("Is a directory"), std::string::npos) << reason_;
}

TEST(Rapl, ThisMachineOpensOrSaysWhyNot) {
  std::string reason;
  auto rapl = open_rapl_source(reason);
  if (!rapl) {
    EXPECT_FALSE(reason.empty());
    return;
  }
  const auto first = rapl->energy_j();
  sleep_ms(5);
  const auto second = rapl->energy_j();
  ASSERT_TRUE(first && second);
  EXPECT_GE(*first, 0.0);
  EXPECT_GE(*second, *first);
}

TEST(Nvml, MissingLibraryIsNamed) {
  std::string reason;
  EXPECT_FALSE(open_nvml_source("0000:00:00.0", reason, "libbatchscope-no-such-nvml.so.1"));
  EXPECT_NE(reason.find("NVML could not be loaded"), std::string::npos) << reason;
  EXPECT_NE(reason.find("libbatchscope-no-such-nvml.so.1"), std::string::npos) << reason;
}

TEST(Nvml, LibraryWithoutNvmlIsRefused) {
  std::string reason;
  EXPECT_FALSE(open_nvml_source("0000:00:00.0", reason, "libm.so.6"));
  EXPECT_NE(reason.find("has no nvmlInit_v2"), std::string::npos) << reason;
}

// Runs on machines with and without a driver: either a sane source or a reason, never a crash.
TEST(Nvml, DefaultLibraryOpensOrSaysWhyNot) {
  const std::string bus_id = batchscope::gpu::device_count() > 0
                                 ? batchscope::gpu::device_info(0)["pci_bus_id"].get<std::string>()
                                 : "0000:00:00.0";
  std::string reason;
  auto gpu = open_nvml_source(bus_id, reason);
  if (!gpu) {
    EXPECT_FALSE(reason.empty());
    return;
  }
  EXPECT_TRUE(gpu->method() == "nvml energy counter" || gpu->method() == "nvml power samples");
  EXPECT_EQ(gpu->info()["energy_counter"], gpu->method() == "nvml energy counter");
  if (const auto watts = gpu->power_w()) {
    EXPECT_GE(*watts, 0.0);
  }
  if (const auto first = gpu->energy_j()) {
    sleep_ms(50);
    const auto second = gpu->energy_j();
    ASSERT_TRUE(second);
    EXPECT_GE(*first, 0.0);
    EXPECT_GE(*second, *first);
  }
}

#ifdef BATCHSCOPE_FAKE_NVML
// The NVML source against tests/fake_nvml.cpp: one GPU at 0000:3b:00.0 drawing 250 W.
TEST(FakeNvml, CounterEnergyTelemetryAndFacts) {
  unsetenv("FAKE_NVML_NO_COUNTER");
  std::string reason;
  auto source = open_nvml_source("0000:3B:00.0", reason, BATCHSCOPE_FAKE_NVML);
  ASSERT_NE(source, nullptr) << reason;
  EXPECT_EQ(source->method(), "nvml energy counter");
  EXPECT_NE(source->scope().find("0000:3B:00.0"), std::string::npos) << source->scope();
  EnergyMeter meter(*source);
  meter.begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const EnergyWindow window = meter.end();
  EXPECT_NEAR(window.avg_power_w, 250, 250 * 0.02);
  EXPECT_EQ(window.power_samples, 0);

  const Telemetry t = source->telemetry();
  EXPECT_EQ(t.power_w, 250);
  EXPECT_EQ(t.sm_clock_mhz, 1980);
  EXPECT_EQ(t.memory_clock_mhz, 2619);
  EXPECT_EQ(t.temperature_c, 45);
  EXPECT_EQ(t.utilization_pct, 97);
  const nlohmann::json info = source->info();
  EXPECT_EQ(info.at("name"), "Fake GPU");
  EXPECT_EQ(info.at("driver_version"), "999.1");
  EXPECT_EQ(info.at("power_limit_w"), 700);
  EXPECT_EQ(info.at("pcie").at("current_generation"), 5);
  EXPECT_EQ(info.at("pcie").at("max_width"), 16);
  EXPECT_TRUE(info.at("energy_counter").get<bool>());
}

TEST(FakeNvml, UnknownGpuIsNamed) {
  std::string reason;
  EXPECT_EQ(open_nvml_source("0000:07:00.0", reason, BATCHSCOPE_FAKE_NVML), nullptr);
  EXPECT_NE(reason.find("0000:07:00.0"), std::string::npos) << reason;
  EXPECT_NE(reason.find("Not Found"), std::string::npos) << reason;
}

TEST(FakeNvml, BoardsWithoutACounterAreSampled) {
  setenv("FAKE_NVML_NO_COUNTER", "1", 1);
  std::string reason;
  auto source = open_nvml_source("0000:3b:00.0", reason, BATCHSCOPE_FAKE_NVML);
  unsetenv("FAKE_NVML_NO_COUNTER");
  ASSERT_NE(source, nullptr) << reason;
  // Whether the board has a counter is decided once, when the source opens.
  EXPECT_EQ(source->method(), "nvml power samples");
  EXPECT_FALSE(source->energy_j().has_value());
  EnergyMeter meter(*source, /*sample_period_ms=*/5);
  meter.begin();
  EXPECT_TRUE(meter.sampled());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const EnergyWindow window = meter.end();
  EXPECT_NEAR(window.avg_power_w, 250, 1e-6);
  EXPECT_GT(window.power_samples, 5);
}
#endif
