#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "lib/timing/step_runner.h"

namespace batchscope {

// A batch size still to run: its experiment, size, and steps (warm-up plus timed, all passes).
struct ProgressUnit {
  std::string experiment;
  int64_t batch_size = 0;
  int steps = 0;
};

// A batch size run: how long one of its steps took on the wall clock, everything around it included.
struct ProgressSample {
  int64_t batch_size = 0;
  double seconds_per_step = 0;
};

// What is left, in seconds, learned from what was run: per experiment, a step's wall time as a straight
// line in the batch size through that experiment's sizes run so far (one size: proportional to the batch
// size); an experiment not started yet goes at the sweep's mean seconds per sample-step. nullopt before
// anything was run.
std::optional<double> estimate_remaining_s(const std::map<std::string, std::vector<ProgressSample>>& seen,
                                           const std::vector<ProgressUnit>& left);

// One self-overwriting status line on a terminal: experiment, batch size, the step being run (warm-up or
// timed), elapsed time and an estimate of what remains. Silent when disabled (not a terminal, or
// --quiet). Updated between batch sizes and between steps, never inside a timed step: step() reads the
// clock and returns unless a redraw is due (every 0.25 s at most).
class Progress {
 public:
  using Clock = std::chrono::steady_clock;

  Progress(std::ostream& out, bool enabled) : out_(out), enabled_(enabled), begin_(Clock::now()) {}
  Progress(const Progress&) = delete;  // its observer points at it
  Progress& operator=(const Progress&) = delete;

  // The batch sizes this session will run.
  void begin_sweep(std::vector<ProgressUnit> units) { left_ = std::move(units); }
  // A batch size starts: drawn at once.
  void begin_size(const std::string& experiment, int experiment_index, int experiments, int64_t batch_size,
                  int warmup_steps, int timed_steps);
  // A step of it has finished: the observer of the size's steps calls this.
  void step(StepPart part, int done, int total);
  // A batch size (one pass of it, `steps` warm-up and timed steps) ended: measured (its time per step
  // is learned), or not (skipped, out of memory).
  void end_size(const std::string& experiment, int64_t batch_size, int steps, bool measured);
  void finish();

  // The observer to hand to the steps of the running size.
  const StepObserver& observer() const { return observer_; }
  std::optional<double> remaining_s() const;

  static std::string format_duration(double seconds);

 private:
  void draw();
  void take_unit(const std::string& experiment, int64_t batch_size, int steps);

  std::ostream& out_;
  bool enabled_;
  Clock::time_point begin_;
  Clock::time_point last_draw_{};
  std::vector<ProgressUnit> left_;
  std::map<std::string, std::vector<ProgressSample>> seen_;
  // The running size.
  std::string experiment_;
  int experiment_index_ = 0, experiments_ = 0;
  int64_t batch_size_ = 0;
  int warmup_steps_ = 0, timed_steps_ = 0;
  int planned_steps_ = 0;  // warm-up and timed steps as the size began
  // Per experiment: the steps its measured sizes took against those planned for them.
  struct Stretch {
    double run = 0, planned = 0;
  };
  std::map<std::string, Stretch> stretch_;
  StepPart part_ = StepPart::WarmUp;
  int done_ = 0;  // of the current part
  Clock::time_point size_begin_{};
  bool running_ = false;
  std::size_t last_width_ = 0;
  StepObserver observer_ = [this](StepPart part, int done, int total) { step(part, done, total); };
};

}  // namespace batchscope
