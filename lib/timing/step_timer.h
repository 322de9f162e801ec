#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <vector>

namespace batchscope {

// Times each step of a loop on its own. reserve() prepares all storage before the loop, so that
// start()/stop() do nothing but take a timestamp; elapsed_ms() is read after the loop.
class StepTimer {
 public:
  virtual ~StepTimer() = default;
  virtual void reserve(int steps) = 0;
  virtual void start(int step) = 0;
  virtual void stop(int step) = 0;
  // May wait for the device to finish the step.
  virtual double elapsed_ms(int step) = 0;
  virtual const char* method() const = 0;
};

// Monotonic host clock: the timer for CPU steps.
class HostStepTimer : public StepTimer {
 public:
  void reserve(int steps) override;
  void start(int step) override { starts_[step] = std::chrono::steady_clock::now(); }
  void stop(int step) override { stops_[step] = std::chrono::steady_clock::now(); }
  double elapsed_ms(int step) override;
  const char* method() const override { return "steady_clock"; }

 private:
  std::vector<std::chrono::steady_clock::time_point> starts_, stops_;
};

// CUDA events on the device's current stream for a CUDA device, the host clock otherwise.
std::unique_ptr<StepTimer> make_step_timer(const torch::Device& device);

// Median time of an empty start/stop pair: what the timer itself adds to every step.
double measure_timer_overhead_ms(StepTimer& timer, int repetitions = 200);

}  // namespace batchscope
