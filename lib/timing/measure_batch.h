#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lib/config/config.h"
#include "lib/power/device_power.h"
#include "lib/records/records.h"
#include "lib/timing/step_runner.h"
#include "lib/timing/step_timer.h"

namespace batchscope {

// What measuring one batch size gives: its timed steps, the peak memory they took, and the energy
// of a window over them where the device has a power source.
struct BatchMeasurement {
  TimedSteps steps;
  std::optional<int64_t> peak_memory_bytes;
  std::optional<PointEnergy> energy;
  // Wall time of each part, in seconds: making the batch, the warm-up, the timed steps, and the steps
  // that lengthened the energy window.
  double prepare_s = 0, warm_up_s = 0, timed_s = 0, energy_s = 0;
  // steps: auto: why the timed steps stopped (kStoppedBy...); empty for a fixed count.
  std::string steps_stopped_by;
};

// Prepares the workload at this batch size, warms it up, and times e.timed_steps steps (or, with
// e.auto_steps, as many as the median's confidence interval needs) with the
// peak-memory counter reset before them. Where power.source is set, an energy window covers the timed
// steps, lengthened by more of the same steps (untimed for the result) to power.min_window_ms. A
// power reading that fails mid-window costs the energy, not the times.
// An observer is told of each warm-up and timed step (not of the energy window's extra steps).
BatchMeasurement measure_batch(Workload& workload, StepTimer& timer, const ExperimentConfig& e, int64_t batch_size,
                               power::DevicePower& power, const StepObserver* observer = nullptr);

}  // namespace batchscope
