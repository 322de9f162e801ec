#include "lib/power/energy_meter.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

namespace batchscope::power {
namespace {

// Idle power barely moves, so the meter's usual period is plenty for a sampled source.
constexpr double kIdleSamplePeriodMs = 10;

std::string format_ms(double ms) { return std::to_string(static_cast<long long>(ms + 0.5)) + " ms"; }

}  // namespace

double steady_now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double integrate_power(const std::vector<std::pair<double, double>>& samples) {
  double joules = 0;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    const auto& [t0, w0] = samples[i - 1];
    const auto& [t1, w1] = samples[i];
    joules += (t1 - t0) / 1000 * (w0 + w1) / 2;
  }
  return joules;
}

PowerSampler::PowerSampler(PowerSource& source, double period_ms, Clock clock)
    : source_(source), period_ms_(period_ms), clock_(std::move(clock)) {
  TORCH_CHECK(period_ms > 0, "a PowerSampler needs a positive period, not ", period_ms, " ms");
}

PowerSampler::~PowerSampler() { stop(); }

void PowerSampler::record_reading() {
  const double time_ms = clock_();
  if (const auto watts = source_.power_w()) samples_.emplace_back(time_ms, *watts);
}

void PowerSampler::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(!running_, "PowerSampler::start() while it is running");
  samples_.clear();
  record_reading();
  running_ = true;
  thread_ = std::thread(&PowerSampler::run, this);
}

std::vector<std::pair<double, double>> PowerSampler::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!running_) return samples_;
    running_ = false;
    // Under the lock, so the last reading follows every reading of the thread.
    record_reading();
  }
  wake_.notify_all();
  thread_.join();
  return samples_;
}

void PowerSampler::run() {
  using Steady = std::chrono::steady_clock;
  const auto period =
      std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double, std::milli>(period_ms_));
  auto next = Steady::now() + period;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_until(lock, next, [this] { return !running_; })) {
    record_reading();
    // A slow read skips the ticks it missed rather than firing them back to back.
    next = std::max(next + period, Steady::now());
  }
}

CounterWatch::CounterWatch(PowerSource& source, double period_ms) : source_(source), period_(period_ms) {
  TORCH_CHECK(period_ms > 0, "a CounterWatch needs a positive period, not ", period_ms, " ms");
  thread_ = std::thread(&CounterWatch::run, this);
}

CounterWatch::~CounterWatch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CounterWatch::run() {
  using Steady = std::chrono::steady_clock;
  const auto period = std::chrono::duration_cast<Steady::duration>(period_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_until(lock, Steady::now() + period, [this] { return stopping_; })) {
    // The reading itself is not needed: reading is what undoes a wrap-around. A source that stopped
    // answering is found at the window's end.
    source_.energy_j();
    ++reads_;
  }
}

EnergyMeter::EnergyMeter(PowerSource& source, double sample_period_ms, Clock clock)
    : source_(source), sample_period_ms_(sample_period_ms), clock_(std::move(clock)) {}

EnergyMeter::~EnergyMeter() = default;

void EnergyMeter::begin() {
  // A window left open (an exception between begin() and end()) is dropped here.
  sampler_.reset();
  watch_.reset();
  open_ = true;
  begin_ms_ = clock_();
  const auto joules = source_.energy_j();
  sampled_ = !joules;
  if (joules) {
    begin_j_ = *joules;
    if (std::isfinite(source_.read_every_ms()))
      watch_ = std::make_unique<CounterWatch>(source_, source_.read_every_ms());
    return;
  }
  sampler_ = std::make_unique<PowerSampler>(source_, sample_period_ms_, clock_);
  sampler_->start();
}

double EnergyMeter::elapsed_ms() const { return clock_() - begin_ms_; }

EnergyWindow EnergyMeter::end() {
  TORCH_CHECK(open_, "EnergyMeter::end() without begin()");
  open_ = false;
  EnergyWindow window;
  window.method = source_.method();
  if (sampled_) {
    const auto readings = sampler_->stop();
    sampler_.reset();
    const double end_ms = clock_();
    window.window_ms = end_ms - begin_ms_;
    if (readings.size() < 2) {
      throw std::runtime_error("The power of " + source_.scope() + " was read only " +
                               std::to_string(readings.size()) + " times in a window of " +
                               format_ms(window.window_ms) +
                               ", too few to integrate; its energy is unknown.");
    }
    // The readings fall just inside the window (further when the thread waits for a core), so each
    // edge is given the power of the reading nearest to it, and energy and window cover one span.
    std::vector<std::pair<double, double>> span;
    span.reserve(readings.size() + 2);
    span.emplace_back(begin_ms_, readings.front().second);
    span.insert(span.end(), readings.begin(), readings.end());
    span.emplace_back(end_ms, readings.back().second);
    window.joules = integrate_power(span);
    window.power_samples = static_cast<int>(readings.size());
  } else {
    watch_.reset();
    const auto joules = source_.energy_j();
    window.window_ms = clock_() - begin_ms_;
    if (!joules) {
      throw std::runtime_error("The energy counter of " + source_.scope() +
                               " was read at the start of a window but could not be read at its end, " +
                               format_ms(window.window_ms) + " later; the window's energy is unknown.");
    }
    window.joules = *joules - begin_j_;
  }
  window.avg_power_w = window.window_ms > 0 ? window.joules / (window.window_ms / 1000) : 0;
  return window;
}

EnergyWindow measure_idle(PowerSource& source, double seconds, Clock clock) {
  EnergyMeter meter(source, kIdleSamplePeriodMs, std::move(clock));
  meter.begin();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return meter.end();
}

double observed_update_ms(PowerSource& source, double budget_ms, Clock clock) {
  std::optional<double> last = source.energy_j();
  if (!last) return source.resolution_ms();
  const double start = clock();
  std::vector<double> changes;
  while (clock() - start < budget_ms && changes.size() < 21) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    const std::optional<double> now = source.energy_j();
    if (!now) return source.resolution_ms();
    if (*now != *last) {
      changes.push_back(clock());
      last = now;
    }
  }
  // The first change ends an interval that began before we watched; only later ones are whole.
  if (changes.size() < 3) return std::max(source.resolution_ms(), budget_ms / 2);
  std::vector<double> intervals;
  for (std::size_t i = 1; i < changes.size(); ++i) intervals.push_back(changes[i] - changes[i - 1]);
  std::nth_element(intervals.begin(), intervals.begin() + static_cast<std::ptrdiff_t>(intervals.size() / 2),
                   intervals.end());
  return std::max(source.resolution_ms(), intervals[intervals.size() / 2]);
}

}  // namespace batchscope::power
