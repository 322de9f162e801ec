#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

// steps: auto, after each block of timed steps: stop (and why), or how many steps the next block times.
// It stops once the median's 95% confidence interval is within ±a.ci_width of it and a.min_time_s has
// passed (judged once first_steps have run), or at a.max_time_s, or at limits::kMaxSteps. A next block is
// sized to what the interval (narrowing as 1/sqrt(n)) and min_time still need, at most as many steps as
// have run, and no more than half the time left at the pace so far. times_ms: every step so far;
// elapsed_s: the wall time since the first began.
struct AutoStepsNext {
  std::string stopped_by;  // kStoppedBy..., or empty to go on
  int64_t block = 0;       // the next block's steps when going on
};
AutoStepsNext next_auto_block(const AutoSteps& a, int64_t first_steps, const std::vector<double>& times_ms,
                              double elapsed_s);

// Prepares the workload at this batch size, warms it up, and times e.timed_steps steps (or, with
// e.auto_steps, as many as the median's confidence interval needs) with the
// peak-memory counter reset before them. Where power.source is set, an energy window covers the timed
// steps, lengthened by more of the same steps (untimed for the result) to power.min_window_ms. A
// power reading that fails mid-window costs the energy, not the times.
// An observer is told of each warm-up and timed step (not of the energy window's extra steps).
BatchMeasurement measure_batch(Workload& workload, StepTimer& timer, const ExperimentConfig& e, int64_t batch_size,
                               power::DevicePower& power, const StepObserver* observer = nullptr);

}  // namespace batchscope
