#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace batchscope {

// One self-overwriting status line on a terminal: experiment, batch size, steps, elapsed and an
// estimate of what remains. Silent when disabled (not a terminal, or --quiet). Called only between
// batch sizes and phases, never inside a timed loop.
class Progress {
 public:
  Progress(std::ostream& out, bool enabled) : out_(out), enabled_(enabled), begin_(Clock::now()) {}

  // total_work: the sum of the batch sizes still to run, the unit of the estimate (a step's time
  // grows about linearly with its batch size).
  void begin_sweep(double total_work) { total_work_ = total_work; }
  void show(const std::string& experiment, int experiment_index, int experiments, int64_t batch_size,
            int steps_done, int steps_total);
  void work_done(double work) { done_work_ += work; }
  void finish();

  static std::string format_duration(double seconds);

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& out_;
  bool enabled_;
  Clock::time_point begin_;
  double total_work_ = 0, done_work_ = 0;
  std::size_t last_width_ = 0;
};

}  // namespace batchscope
