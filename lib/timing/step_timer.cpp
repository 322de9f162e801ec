#include "lib/timing/step_timer.h"

#include "lib/device/gpu.h"
#include "lib/common/statistics.h"

namespace batchscope {

void HostStepTimer::reserve(int steps) {
  starts_.assign(static_cast<std::size_t>(steps), {});
  stops_.assign(static_cast<std::size_t>(steps), {});
}

double HostStepTimer::elapsed_ms(int step) {
  return std::chrono::duration<double, std::milli>(stops_[step] - starts_[step]).count();
}

std::unique_ptr<StepTimer> make_step_timer(const torch::Device& device) {
  if (device.is_cuda()) return gpu::make_event_timer(device.index());
  return std::make_unique<HostStepTimer>();
}

double measure_timer_overhead_ms(StepTimer& timer, int repetitions) {
  timer.reserve(repetitions);
  for (int i = 0; i < repetitions; ++i) {
    timer.start(i);
    timer.stop(i);
  }
  std::vector<double> times(static_cast<std::size_t>(repetitions));
  for (int i = 0; i < repetitions; ++i) times[static_cast<std::size_t>(i)] = timer.elapsed_ms(i);
  return median(times);
}

}  // namespace batchscope
