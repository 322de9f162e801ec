#pragma once

#include <atomic>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "lib/power/energy_meter.h"
#include "lib/power/power_source.h"

namespace batchscope::power::testing {

// Power as a known function of time (ms since the source was made) with its exact integral, so a
// test can hold a measurement against the truth.
struct PowerCurve {
  std::function<double(double)> watts;
  std::function<double(double)> joules;  // energy from 0 to t

  static PowerCurve constant(double w) {
    return {[w](double) { return w; }, [w](double t_ms) { return w * t_ms / 1000; }};
  }
  // P = w0 + slope * t, t in seconds.
  static PowerCurve linear(double w0, double w_per_s) {
    return {[=](double t_ms) { return w0 + w_per_s * t_ms / 1000; },
            [=](double t_ms) {
              const double t = t_ms / 1000;
              return w0 * t + w_per_s * t * t / 2;
            }};
  }
  // P = mean + amplitude * sin(2 pi t / period).
  static PowerCurve sine(double mean_w, double amplitude_w, double period_ms) {
    const double omega = 2 * std::acos(-1.0) / period_ms;  // radians per ms
    return {[=](double t_ms) { return mean_w + amplitude_w * std::sin(omega * t_ms); },
            [=](double t_ms) {
              return (mean_w * t_ms + amplitude_w * (1 - std::cos(omega * t_ms)) / omega) / 1000;
            }};
  }
};

// A PowerSource that follows a PowerCurve on a clock. With counter_step_ms > 0 it has an energy
// counter that, like real ones, moves only every counter_step_ms (it holds the energy at the last
// multiple of the step); with 0 it has none, and its power has to be sampled.
class FakePowerSource : public PowerSource {
 public:
  FakePowerSource(PowerCurve curve, Clock clock, double counter_step_ms)
      : curve_(std::move(curve)), clock_(std::move(clock)), origin_ms_(clock_()), step_ms_(counter_step_ms) {}

  std::string method() const override { return step_ms_ > 0 ? "fake energy counter" : "fake power samples"; }
  std::string scope() const override { return "fake device"; }
  std::optional<double> energy_j() override {
    if (step_ms_ <= 0 || counter_broken_) return std::nullopt;
    return curve_.joules(std::floor(now_ms() / step_ms_) * step_ms_);
  }
  std::optional<double> power_w() override {
    ++power_reads_;
    if (power_broken_) return std::nullopt;
    return curve_.watts(now_ms());
  }
  double resolution_ms() const override { return step_ms_ > 0 ? step_ms_ : 1; }
  Telemetry telemetry() override {
    Telemetry t;
    t.power_w = power_w();
    return t;
  }
  nlohmann::json info() override { return {{"fake", true}, {"energy_counter", step_ms_ > 0}}; }

  // The source's time: ms on its clock since it was made, when the clock read origin_ms().
  double now_ms() const { return clock_() - origin_ms_; }
  double origin_ms() const { return origin_ms_; }
  // The true energy between two of the source's times.
  double joules_between(double from_ms, double to_ms) const {
    return curve_.joules(to_ms) - curve_.joules(from_ms);
  }
  // From now on the counter (or the power) cannot be read, as when a driver goes away.
  void break_counter() { counter_broken_ = true; }
  void break_power() { power_broken_ = true; }
  int power_reads() const { return power_reads_; }

 private:
  PowerCurve curve_;
  Clock clock_;
  double origin_ms_;
  double step_ms_;
  std::atomic<bool> counter_broken_{false};
  std::atomic<bool> power_broken_{false};
  std::atomic<int> power_reads_{0};
};

}  // namespace batchscope::power::testing
