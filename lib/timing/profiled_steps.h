#pragma once

#include <string>

#include "lib/records/profile_records.h"
#include "lib/timing/step_runner.h"

namespace batchscope {

// Runs `steps` more steps of a prepared, warmed-up workload, each under LibTorch's profiler with the
// layer scopes on (models/layer_scope.h), and returns what they spent per layer and per operator or
// kernel (lib/timing/profile_attribution.h), keyed by `key`. These steps are never timed steps: the
// sweep runs them after its timed steps and energy window, so profiling cannot change the numbers it
// explains. On a GPU the profiler records kernels where it can (CUPTI); where it records none, the
// record says so in its method. trace_path, where not empty, receives a Chrome trace (Perfetto,
// chrome://tracing) of the first profiled step.
ProfileRecord profile_steps(Workload& workload, const BatchKey& key, int steps, const std::string& trace_path);

}  // namespace batchscope
