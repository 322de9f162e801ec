#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lib/power/power_source.h"

namespace batchscope::power {

// Milliseconds on a monotonic clock; injectable so tests can drive time.
using Clock = std::function<double()>;
double steady_now_ms();

// The energy of one window of work.
struct EnergyWindow {
  double joules = 0;
  double window_ms = 0;
  double avg_power_w = 0;  // joules / window
  std::string method;      // the source's method()
  int power_samples = 0;   // sampled sources: readings integrated (0 for a counter)
};

// Trapezoidal integral of (time ms, power W) samples, in joules; 0 with fewer than two samples.
double integrate_power(const std::vector<std::pair<double, double>>& samples);

// Reads power every period_ms on a background thread between start() and stop(), stamping each
// reading with `clock`. Used only for sources without an energy counter; the thread sleeps between
// readings. Every read happens under mutex_, so start() and stop() never read alongside the thread.
class PowerSampler {
 public:
  PowerSampler(PowerSource& source, double period_ms, Clock clock = steady_now_ms);
  ~PowerSampler();
  PowerSampler(const PowerSampler&) = delete;
  PowerSampler& operator=(const PowerSampler&) = delete;

  // Takes a first reading and starts the thread.
  void start();
  // Takes a last reading, joins the thread and returns every (time ms, power W) reading. Readings
  // where the source reported no power are left out.
  std::vector<std::pair<double, double>> stop();

 private:
  void run();
  // Appends one reading; the caller holds mutex_.
  void record_reading();

  PowerSource& source_;
  double period_ms_;
  Clock clock_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::mutex mutex_;
  // Wakes the thread from its sleep at stop(), so stopping never waits out a period.
  std::condition_variable wake_;
  std::vector<std::pair<double, double>> samples_;
};

// Reads a counter that wraps on a background thread every period_ms between start and destruction, so
// that however long a step runs no wrap-around goes unseen (the source undoes a wrap only when it reads
// one). The source must allow energy_j() from two threads. The thread sleeps between reads; a read
// takes microseconds, once every couple of minutes for RAPL's usual range.
class CounterWatch {
 public:
  CounterWatch(PowerSource& source, double period_ms);
  ~CounterWatch();
  CounterWatch(const CounterWatch&) = delete;
  CounterWatch& operator=(const CounterWatch&) = delete;

  // Reads finished so far.
  int64_t reads() const { return reads_; }

 private:
  void run();

  PowerSource& source_;
  std::chrono::duration<double, std::milli> period_;
  bool stopping_ = false;  // under mutex_
  std::atomic<int64_t> reads_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
};

// The energy between begin() and end(): the difference of the source's counter where it has one,
// else the integral of power sampled every sample_period_ms. Reading happens at the edges, on the
// sampler thread, or (for a counter that wraps) on a watching thread, never by the timed steps.
class EnergyMeter {
 public:
  explicit EnergyMeter(PowerSource& source, double sample_period_ms = 10, Clock clock = steady_now_ms);
  ~EnergyMeter();
  EnergyMeter(const EnergyMeter&) = delete;
  EnergyMeter& operator=(const EnergyMeter&) = delete;

  void begin();
  // Milliseconds since begin().
  double elapsed_ms() const;
  // Reads of a wrapping counter by the watching thread in the open window; 0 where it has none.
  int64_t watch_reads() const { return watch_ ? watch_->reads() : 0; }
  // Throws std::runtime_error when the source stopped answering during the window.
  EnergyWindow end();

  PowerSource& source() { return source_; }
  // True when the source has no counter and power is sampled.
  bool sampled() const { return sampled_; }

 private:
  PowerSource& source_;
  double sample_period_ms_;
  Clock clock_;
  bool sampled_ = false;
  bool open_ = false;  // between begin() and end()
  double begin_ms_ = 0;
  double begin_j_ = 0;
  std::unique_ptr<PowerSampler> sampler_;
  std::unique_ptr<CounterWatch> watch_;
};

// Average power of a device left alone for `seconds` (the caller makes sure nothing runs on it).
EnergyWindow measure_idle(PowerSource& source, double seconds, Clock clock = steady_now_ms);

// How often the source's energy counter really changes, watched for up to budget_ms: the median time
// between changes, never less than the declared resolution_ms() (which is returned for sources without
// a counter). Boards differ (10 ms to 100 ms for NVML's counter), and the energy windows are sized by it.
double observed_update_ms(PowerSource& source, double budget_ms = 500, Clock clock = steady_now_ms);

}  // namespace batchscope::power
