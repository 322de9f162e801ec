#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

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

// The launch shapes of the kernels in a Chrome trace the profiler saved: kernel name -> (grid, block),
// each as "[x, y, z]"; empty where the trace has none (a CPU trace) or cannot be read.
std::map<std::string, std::pair<std::string, std::string>> kernel_launch_shapes(const std::string& trace_path);

// One layer's passes as a profiled step counts them, run on their own: per run and pass, the time of the
// kernels its operators launched where a GPU ran them (the profiler recording them), else its operators'
// host time (LayerTime.device_ms or cpu_ms of profile_steps). `run` runs `runs` times after `before`,
// both under one profiler session with the layer scopes on: `before` may run the layer's forward pass
// inside a models::LayerScope of `layer`, so that a backward pass in `run` finds the layer of its
// autograd nodes, and one session times both passes.
struct ProfiledRuns {
  // Per pass asked, one time per run; empty where a GPU ran them and no kernels were recorded.
  std::map<std::string, std::vector<double>> ms;
  bool kernels = false;  // kernels' time on a GPU; else operators' host time
};
ProfiledRuns profile_layer_runs(const torch::Device& device, int runs, const std::string& layer,
                                const std::vector<std::string>& passes, const std::function<void()>& before,
                                const std::function<void()>& run);

}  // namespace batchscope
