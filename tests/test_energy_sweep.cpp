#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "lib/power/energy_meter.h"
#include "lib/summary_table.h"
#include "lib/sweep_runner.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace batchscope;

namespace {

// An energy counter on the real clock that draws `idle_w` until the sweep first reads its telemetry
// (just before the first batch size's window) and `busy_w` from then on.
class SteppedPowerSource : public power::PowerSource {
 public:
  SteppedPowerSource(double idle_w, double busy_w) : idle_w_(idle_w), busy_w_(busy_w), opened_ms_(now()) {}

  std::string method() const override { return "fake counter"; }
  std::string scope() const override { return "test device"; }
  std::optional<double> energy_j() override {
    const double t = now();
    const double busy_from = busy_from_ms_.value_or(t);
    return (idle_w_ * (busy_from - opened_ms_) + busy_w_ * (t - busy_from)) / 1e3;
  }
  std::optional<double> power_w() override { return busy_from_ms_ ? busy_w_ : idle_w_; }
  double resolution_ms() const override { return 1; }
  power::Telemetry telemetry() override {
    if (!busy_from_ms_) busy_from_ms_ = now();
    power::Telemetry t;
    t.power_w = power_w();
    t.sm_clock_mhz = 1980;
    t.temperature_c = 41;
    return t;
  }
  nlohmann::json info() override { return {{"power_limit_w", 700}}; }

 private:
  static double now() { return power::steady_now_ms(); }
  double idle_w_, busy_w_, opened_ms_;
  std::optional<double> busy_from_ms_;
};

SweepConfig tiny_sweep() {
  ExperimentConfig e;
  e.name = "mnist_tiny";
  e.model = "mnist_cnn";
  e.input_shape = {1, 28, 28};
  e.classes = 10;
  e.batch_sizes = {1, 4};
  e.warmup_steps = 1;
  e.timed_steps = 3;
  e.device = "cpu";
  return SweepConfig{"test", {e}};
}

std::vector<Json> of_type(const std::vector<Json>& records, const std::string& type) {
  std::vector<Json> out;
  for (const Json& r : records) {
    if (r.value("type", "") == type) out.push_back(r);
  }
  return out;
}

SweepOutcome sweep_with(const SweepOptions& base, const std::string& name) {
  SweepOptions options = base;
  const testing_support::TempDir dir;
  options.out_dir = dir / name;
  std::ostringstream progress;
  return run_sweep(resolve_for_machine(tiny_sweep()), options, progress);
}

}  // namespace

TEST(EnergySweep, EveryPointCarriesTheEnergyOfItsWindow) {
  constexpr double kIdleW = 30, kBusyW = 100, kIdleSeconds = 0.05;
  SweepOptions options;
  options.idle_seconds = kIdleSeconds;
  options.min_energy_window_ms = 40;
  options.open_power = [&](const torch::Device& device, std::string&) -> std::unique_ptr<power::PowerSource> {
    EXPECT_TRUE(device.is_cpu());
    return std::make_unique<SteppedPowerSource>(kIdleW, kBusyW);
  };
  const SweepOutcome outcome = sweep_with(options, "fake");

  const Json run = of_type(outcome.records, "run").at(0);
  const Json cpu = run.at("power").at("cpu");
  EXPECT_TRUE(cpu.at("available").get<bool>());
  EXPECT_EQ(cpu.at("method"), "fake counter");
  EXPECT_EQ(cpu.at("min_window_ms"), 40);
  EXPECT_NEAR(cpu.at("idle").at("power_w").get<double>(), kIdleW, 0.5);
  EXPECT_TRUE(run.contains("energy_note"));
  EXPECT_NE(format_summary_table(outcome.records).find("samples/J"), std::string::npos);

  const auto points = of_type(outcome.records, "point");
  ASSERT_EQ(points.size(), 2u);
  for (const Json& p : points) {
    const double batch = p.at("batch_size").get<double>();
    const double window_ms = p.at("energy_window_ms").get<double>();
    const int steps = p.at("energy_steps").get<int>();
    EXPECT_EQ(p.at("energy_method"), "fake counter");
    EXPECT_GE(window_ms, 40.0);
    EXPECT_GE(steps, 3);
    EXPECT_NEAR(p.at("avg_power_w").get<double>(), kBusyW, 1.0);
    EXPECT_NEAR(p.at("energy_j").get<double>(), kBusyW * window_ms / 1e3, 0.01 * kBusyW * window_ms / 1e3);
    EXPECT_NEAR(p.at("j_per_step").get<double>(), p.at("energy_j").get<double>() / steps, 1e-9);
    EXPECT_NEAR(p.at("j_per_sample").get<double>(), p.at("j_per_step").get<double>() / batch, 1e-9);
    EXPECT_NEAR(p.at("samples_per_j").get<double>() * p.at("j_per_sample").get<double>(), 1.0, 1e-9);
    EXPECT_NEAR(p.at("idle_power_w").get<double>(), kIdleW, 0.5);
    EXPECT_NEAR(p.at("avg_power_above_idle_w").get<double>(), kBusyW - kIdleW, 1.5);
    EXPECT_NEAR(p.at("j_per_sample_above_idle").get<double>(),
                (kBusyW - kIdleW) * window_ms / 1e3 / steps / batch,
                0.03 * (kBusyW - kIdleW) * window_ms / 1e3 / steps / batch);
    EXPECT_EQ(p.at("start_sm_clock_mhz"), 1980);
    char row[64];
    std::snprintf(row, sizeof row, "%10.4g", p.at("samples_per_j").get<double>());
    EXPECT_NE(format_summary_table(outcome.records).find(row), std::string::npos) << row;
    EXPECT_EQ(p.at("end_temperature_c"), 41);
    EXPECT_TRUE(p.at("end_memory_clock_mhz").is_null());
  }
}

TEST(EnergySweep, ShortWindowsRunMoreStepsInsideTheWindow) {
  SweepOptions options;
  options.idle_seconds = 0;
  options.min_energy_window_ms = 400;
  options.open_power = [](const torch::Device&, std::string&) -> std::unique_ptr<power::PowerSource> {
    return std::make_unique<SteppedPowerSource>(0, 50);
  };
  const SweepOutcome outcome = sweep_with(options, "long_window");
  for (const Json& p : of_type(outcome.records, "point")) {
    EXPECT_GE(p.at("energy_window_ms").get<double>(), 400.0);
    // Where the 3 timed steps take less than the window (a tiny mnist_cnn step takes a few ms, unless
    // the machine is very busy), the window runs more of the same steps.
    EXPECT_GE(p.at("energy_steps").get<int>(), 3);
    if (3 * p.at("max_ms").get<double>() < 400) EXPECT_GT(p.at("energy_steps").get<int>(), 3);
    EXPECT_EQ(p.at("samples"), 3);  // the timed steps are still the 3 asked for
    EXPECT_TRUE(p.at("idle_power_w").is_null());
    EXPECT_TRUE(p.at("samples_per_j_above_idle").is_null());
  }
}

TEST(EnergySweep, WithoutASourceTheRunSaysWhyAndPointsHaveNoEnergy) {
  SweepOptions options;
  options.open_power = [](const torch::Device&, std::string& reason) -> std::unique_ptr<power::PowerSource> {
    reason = "this test has no power meter.";
    return nullptr;
  };
  SweepOutcome outcome = sweep_with(options, "none");
  const Json cpu = of_type(outcome.records, "run").at(0).at("power").at("cpu");
  EXPECT_FALSE(cpu.at("available").get<bool>());
  EXPECT_EQ(cpu.at("reason"), "this test has no power meter.");
  for (const Json& p : of_type(outcome.records, "point")) EXPECT_FALSE(p.contains("energy_j"));
  EXPECT_EQ(format_summary_table(outcome.records).find("samples/J"), std::string::npos);

  options.measure_energy = false;
  outcome = sweep_with(options, "off");
  const Json off = of_type(outcome.records, "run").at(0).at("power").at("cpu");
  EXPECT_FALSE(off.at("available").get<bool>());
  EXPECT_NE(off.at("reason").get<std::string>().find("--no-energy"), std::string::npos);
}

// A counter that stops answering inside the second batch size's window: after its opening read.
class FailingPowerSource : public SteppedPowerSource {
 public:
  FailingPowerSource() : SteppedPowerSource(0, 80) {}
  std::optional<double> energy_j() override {
    if (telemetry_reads_ >= 3 && reads_in_second_window_++ >= 1) return std::nullopt;
    return SteppedPowerSource::energy_j();
  }
  power::Telemetry telemetry() override {
    ++telemetry_reads_;
    return SteppedPowerSource::telemetry();
  }

 private:
  int telemetry_reads_ = 0;
  int reads_in_second_window_ = 0;
};

TEST(EnergySweep, ALostCounterCostsThatPointItsEnergyNotTheSweep) {
  SweepOptions options;
  options.idle_seconds = 0;
  options.min_energy_window_ms = 20;
  options.open_power = [](const torch::Device&, std::string&) -> std::unique_ptr<power::PowerSource> {
    return std::make_unique<FailingPowerSource>();
  };
  const SweepOutcome outcome = sweep_with(options, "lost_counter");
  const auto points = of_type(outcome.records, "point");
  ASSERT_EQ(points.size(), 2u);
  EXPECT_NEAR(points[0].at("avg_power_w").get<double>(), 80, 1);
  EXPECT_FALSE(points[1].contains("energy_j"));
  EXPECT_EQ(points[1].at("samples"), 3);
  EXPECT_EQ(of_type(outcome.records, "end").size(), 1u);
}
