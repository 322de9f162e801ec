#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/records/profile_records.h"
#include "lib/timing/profile_attribution.h"
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
  // Per pass asked, one time per run; empty where a GPU ran them and no kernels were recorded, or where
  // the pass's runs did not all show the same kernels (see dropped).
  std::map<std::string, std::vector<double>> ms;
  bool kernels = false;  // kernels' time on a GPU; else operators' host time
  // Where a GPU ran them: the kernels each pass launched in each run. A run that shows fewer kernels than
  // another lost some of them (a profiler whose buffers overflowed, a kernel linked to no operator), and
  // would read too fast: such a pass keeps no times, and `dropped` says why.
  std::map<std::string, int64_t> kernels_per_run;
  std::map<std::string, std::string> dropped;
  // Where a GPU ran them: per pass and run, the time of its kernels that convert tensors between NCHW and
  // NHWC (is_layout_conversion), part of ms.
  std::map<std::string, std::vector<double>> layout_ms;
};

// The scope around each run of a profiled session of runs, which tells one run's events from the next's.
inline constexpr const char* kProfiledRunScope = "batchscope.run";

// Reads the events of one profiled session of runs (each run inside a kProfiledRunScope scope) into the
// layer's passes, as profile_layer_runs does: `cuda` where a GPU ran them.
ProfiledRuns read_layer_runs(const std::vector<ProfilerEvent>& events, const std::string& layer,
                             const std::vector<std::string>& passes, bool cuda);

ProfiledRuns profile_layer_runs(const torch::Device& device, int runs, const std::string& layer,
                                const std::vector<std::string>& passes, const std::function<void()>& before,
                                const std::function<void()>& run);

}  // namespace batchscope
