#include "lib/timing/profiled_steps.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_map>

#include "lib/common/file_writes.h"
#include "lib/device/gpu.h"
#include "lib/records/jsonl.h"
#include "lib/timing/profile_attribution.h"
#include "models/layer_scope.h"

// LibTorch 2.2 and later give event times in nanoseconds, earlier ones in microseconds.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
#define BATCHSCOPE_PROFILER_NANOSECONDS 1
#endif

namespace batchscope {
namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

// The layer scopes, on for as long as it lives.
class ScopesOn {
 public:
  ScopesOn() { models::layer_scopes_on.store(true); }
  ~ScopesOn() { models::layer_scopes_on.store(false); }
  ScopesOn(const ScopesOn&) = delete;
  ScopesOn& operator=(const ScopesOn&) = delete;
};

ProfilerEvent::Kind kind_of(at::RecordScope scope) {
  if (scope == at::RecordScope::USER_SCOPE) return ProfilerEvent::Kind::kScope;
  if (scope == at::RecordScope::BACKWARD_FUNCTION) return ProfilerEvent::Kind::kBackwardNode;
  return ProfilerEvent::Kind::kOperator;
}

ProfilerEvent event_of(const profiler::KinetoEvent& k) {
  ProfilerEvent e;
  e.name = k.name();
#ifdef BATCHSCOPE_PROFILER_NANOSECONDS
  e.start_us = static_cast<double>(k.startNs()) / 1000.0;
  e.duration_us = static_cast<double>(k.durationNs()) / 1000.0;
#else
  e.start_us = static_cast<double>(k.startUs());
  e.duration_us = static_cast<double>(k.durationUs());
#endif
  e.thread = k.startThreadId();
  e.sequence = k.sequenceNr();
  e.correlation = k.correlationId();
  e.linked_correlation = k.linkedCorrelationId();
  e.kind = k.deviceType() == c10::DeviceType::CUDA ? ProfilerEvent::Kind::kKernel
                                                  : kind_of(static_cast<at::RecordScope>(k.scope()));
  if (k.hasModuleHierarchy()) {
    const auto hierarchy = k.moduleHierarchy();
    e.module = module_path(std::vector<std::string>(hierarchy.begin(), hierarchy.end()));
  }
  return e;
}

// A Chrome trace of our own, where this LibTorch cannot save the profiler's (built without Kineto).
void write_trace(const std::vector<ProfilerEvent>& events, const std::string& path) {
  Json trace_events = Json::array();
  for (const ProfilerEvent& e : events) {
    const bool kernel = e.kind == ProfilerEvent::Kind::kKernel;
    const char* category = kernel ? "kernel" : e.kind == ProfilerEvent::Kind::kScope ? "user_annotation" : "cpu_op";
    Json args = {{"sequence", e.sequence}, {"correlation", e.correlation}};
    if (kernel) args["linked_correlation"] = e.linked_correlation;
    trace_events.push_back({{"name", e.name},
                            {"cat", category},
                            {"ph", "X"},
                            {"ts", e.start_us},
                            {"dur", e.duration_us},
                            {"pid", kernel ? 1 : 0},
                            {"tid", e.thread},
                            {"args", std::move(args)}});
  }
  replace_file(path, Json{{"traceEvents", trace_events}, {"displayTimeUnit", "ms"}}.dump() + "\n");
}

// The ranges of the legacy profiler (a start and an end event per range, paired by handle), with the
// GPU time between the CUDA events it records at both ends.
std::vector<ProfilerEvent> legacy_events(const profiler::thread_event_lists& lists) {
  std::vector<ProfilerEvent> out;
  for (const auto& list : lists) {
    std::unordered_map<at::RecordFunctionHandle, const profiler::LegacyEvent*> open;
    for (const profiler::LegacyEvent& e : list) {
      if (e.kind() == profiler::EventKind::PushRange) {
        open[e.handle()] = &e;
        continue;
      }
      if (e.kind() != profiler::EventKind::PopRange) continue;
      const auto start = open.find(e.handle());
      if (start == open.end()) continue;
      const profiler::LegacyEvent& push = *start->second;
      ProfilerEvent p;
      p.name = push.name();
      p.start_us = push.cpuUs();
      p.duration_us = push.cpuElapsedUs(e);
      p.thread = push.threadId();
      p.sequence = push.sequenceNr();
      p.kind = kind_of(static_cast<at::RecordScope>(push.scope()));
      if (push.hasCuda() && e.hasCuda()) p.device_us = push.cudaElapsedUs(e);
      out.push_back(std::move(p));
      open.erase(start);
    }
  }
  return out;
}

// The fallback where the profiler records no kernels (no CUPTI): the same steps under the legacy
// profiler, which times every range with CUDA events on the current stream.
std::vector<std::vector<ProfilerEvent>> cuda_event_steps(Workload& workload, int steps) {
  std::vector<std::vector<ProfilerEvent>> events;
  for (int i = 0; i < steps; ++i) {
    workload.stage();
    profiler::enableProfilerLegacy(ProfilerConfig(ProfilerState::CUDA));
    try {
      workload.step();
      workload.synchronize();
    } catch (...) {
      profiler::disableProfilerLegacy();  // so that a later session can start
      throw;
    }
    events.push_back(legacy_events(profiler::disableProfilerLegacy()));
  }
  return events;
}

// Saves the profiler's own Chrome trace where this LibTorch can (built with Kineto), else one of ours.
void save_trace(profiler::ProfilerResult& result, const std::vector<ProfilerEvent>& events, const std::string& path) {
  try {
    result.save(path);
  } catch (const c10::Error&) {
    write_trace(events, path);
  }
}

// The events of a profiled session of runs, per run: a host event by the run scope its start falls in
// (on any thread: autograd's run on their own), a kernel with the operator that launched it. The run
// scopes themselves are left out.
std::vector<std::vector<ProfilerEvent>> events_per_run(const std::vector<ProfilerEvent>& events) {
  std::vector<std::pair<double, double>> spans;
  for (const ProfilerEvent& e : events) {
    if (e.kind == ProfilerEvent::Kind::kScope && e.name == kProfiledRunScope)
      spans.emplace_back(e.start_us, e.start_us + e.duration_us);
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::vector<ProfilerEvent>> runs(spans.size());
  std::unordered_map<uint64_t, std::size_t> run_of_correlation;
  for (const ProfilerEvent& e : events) {
    if (e.kind == ProfilerEvent::Kind::kKernel ||
        (e.kind == ProfilerEvent::Kind::kScope && e.name == kProfiledRunScope))
      continue;
    const auto after = std::upper_bound(spans.begin(), spans.end(), std::make_pair(e.start_us, 1e300));
    if (after == spans.begin()) continue;
    const auto run = static_cast<std::size_t>(after - spans.begin() - 1);
    if (e.start_us > spans[run].second) continue;
    runs[run].push_back(e);
    if (e.correlation != 0) run_of_correlation[e.correlation] = run;
  }
  for (const ProfilerEvent& e : events) {
    if (e.kind != ProfilerEvent::Kind::kKernel) continue;
    const auto found = run_of_correlation.find(e.linked_correlation);
    if (found != run_of_correlation.end()) runs[found->second].push_back(e);
  }
  return runs;
}

}  // namespace

ProfiledRuns profile_layer_runs(const torch::Device& device, int runs, const std::string& layer,
                                const std::vector<std::string>& passes, const std::function<void()>& before,
                                const std::function<void()>& run) {
  ProfiledRuns out;
  if (runs < 1) return out;
  const bool cuda = device.is_cuda();
  std::set<ActivityType> activities{ActivityType::CPU};
  if (cuda) activities.insert(ActivityType::CUDA);
  const ProfilerConfig config(ProfilerState::KINETO);
  std::vector<ProfilerEvent> events;
  {
    ScopesOn scopes;
    profiler::prepareProfiler(config, activities);
    profiler::enableProfiler(config, activities);
    try {
      for (int i = 0; i < runs; ++i) {
        models::LayerScope scope(kProfiledRunScope);
        before();
        run();
      }
      if (cuda) gpu::synchronize(device.index());
    } catch (...) {
      profiler::disableProfiler();  // so that a later session can start
      throw;
    }
    const std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
    for (const profiler::KinetoEvent& k : result->events()) events.push_back(event_of(k));
  }
  return read_layer_runs(events, layer, passes, cuda);
}

ProfiledRuns read_layer_runs(const std::vector<ProfilerEvent>& events, const std::string& layer,
                             const std::vector<std::string>& passes, bool cuda) {
  ProfiledRuns out;
  std::map<std::string, std::vector<int64_t>> kernel_counts;
  for (const std::vector<ProfilerEvent>& events_of_run : events_per_run(events)) {
    ProfileRecord record;
    attribute_events({events_of_run}, record);
    if (cuda && !record.kernel_ms) return {};  // no kernels recorded (no CUPTI)
    for (const std::string& pass : passes) {
      double ms = 0;
      for (const LayerTime& l : record.layers) {
        if (l.layer == layer && l.pass == pass) ms += cuda ? l.device_ms.value_or(0.0) : l.cpu_ms;
      }
      out.ms[pass].push_back(ms);
      if (!cuda) continue;  // a CPU's profile has operators, no kernels
      double count = 0, layout = 0;
      for (const KernelTime& k : record.kernels) {
        if (k.layer != layer || k.pass != pass || k.kind != "kernel") continue;
        count += k.count;
        if (is_layout_conversion(k.name)) layout += k.total_ms;
      }
      kernel_counts[pass].push_back(std::llround(count));
      out.layout_ms[pass].push_back(layout);
    }
  }
  out.kernels = cuda;
  for (const auto& [pass, counts] : kernel_counts) {
    const auto [fewest, most] = std::minmax_element(counts.begin(), counts.end());
    if (*fewest == *most) {
      out.kernels_per_run[pass] = *most;
      continue;
    }
    out.dropped[pass] = "its " + std::to_string(counts.size()) + " runs under the profiler showed from " +
                        std::to_string(*fewest) + " to " + std::to_string(*most) +
                        " kernels, so some were not recorded";
    out.ms[pass].clear();
    out.layout_ms[pass].clear();
  }
  return out;
}

std::map<std::string, std::pair<std::string, std::string>> kernel_launch_shapes(const std::string& trace_path) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  std::ifstream in(trace_path);
  const Json trace = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) return out;
  const auto shape = [](const Json& v) {
    if (!v.is_array()) return std::string();
    std::string text = "[";
    for (std::size_t i = 0; i < v.size(); ++i) text += (i ? ", " : "") + v[i].dump();
    return text + "]";
  };
  for (const Json& e : trace["traceEvents"]) {
    if (!e.is_object() || e.value("cat", "") != "kernel" || !e.contains("args") || !e["args"].is_object()) continue;
    const Json& args = e["args"];
    if (!args.contains("grid") || !e.contains("name") || !e["name"].is_string()) continue;
    out.emplace(e["name"].get<std::string>(), std::make_pair(shape(args["grid"]), shape(args.value("block", Json()))));
  }
  return out;
}

namespace {

ProfileRecord profiled_steps(Workload& workload, const BatchKey& key, int steps,
                             const std::string& trace_path) {
  const bool cuda = workload.device().is_cuda();
  std::set<ActivityType> activities{ActivityType::CPU};
  if (cuda) activities.insert(ActivityType::CUDA);
  // With the module of each operator that TorchScript's interpreter runs, which a TorchScript file's
  // layers are known by; the zoo's operators, run from C++, have none and keep their layer scopes.
  const ProfilerConfig config(ProfilerState::KINETO, /*report_input_shapes=*/false, /*profile_memory=*/false,
                              /*with_stack=*/false, /*with_flops=*/false, /*with_modules=*/true);

  ProfileRecord record;
  record.key = key;
  std::vector<std::vector<ProfilerEvent>> events(static_cast<std::size_t>(steps));
  double wall_ms = 0;
  // A trace kept aside for the kernels' launch shapes, without --trace; removed at the end, also where a
  // step threw.
  struct RemovedAtEnd {
    std::string path;
    ~RemovedAtEnd() {
      std::error_code ignored;
      if (!path.empty()) std::filesystem::remove(path, ignored);
    }
  } kept_aside;
  std::string& launch_trace = kept_aside.path;
  {
    ScopesOn scopes;
    for (int i = 0; i < steps; ++i) {
      workload.stage();
      // One preparation per session, as torch.profiler does: LibTorch 2's Kineto needs it each time
      // (without it the second session crashes) and refuses a second one before enabling.
      profiler::prepareProfiler(config, activities);
      profiler::enableProfiler(config, activities);
      const auto start = std::chrono::steady_clock::now();
      try {
        workload.step();
        workload.synchronize();
      } catch (...) {
        profiler::disableProfiler();  // so that a later session can start
        throw;
      }
      wall_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      const std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
      auto& step_events = events[static_cast<std::size_t>(i)];
      for (const profiler::KinetoEvent& k : result->events()) step_events.push_back(event_of(k));
      if (i == 0 && !trace_path.empty()) {
        save_trace(*result, step_events, trace_path);
        record.trace = trace_path;
      } else if (i == 0 && cuda) {
        // Kernels' launch shapes are only in the profiler's trace: saved aside, read, removed.
        launch_trace = (std::filesystem::temp_directory_path() /
                        ("batchscope-launch-" + std::to_string(::getpid()) + ".json")).string();
        save_trace(*result, step_events, launch_trace);
      }
    }
  }
  record.step_ms = steps > 0 ? wall_ms / steps : 0;
  attribute_events(events, record);
  record.gemm_layers = workload.file_gemm_layers();
  if (cuda) {
    const auto shapes = kernel_launch_shapes(record.trace.empty() ? launch_trace : record.trace);
    for (KernelTime& k : record.kernels) {
      const auto found = shapes.find(k.name);
      if (found == shapes.end()) continue;
      k.grid = found->second.first;
      k.block = found->second.second;
    }
  }
  record.method = "LibTorch profiler: CPU operators";
  if (cuda && record.kernel_ms) record.method += " and CUDA kernels";
  if (cuda && !record.kernel_ms) {
    {
      ScopesOn scopes;
      attribute_events(cuda_event_steps(workload, steps), record);
    }
    record.method += "; no CUDA kernels were recorded (no CUPTI), so each layer's GPU time is taken "
                     "between CUDA events at its start and end";
  }
  return record;
}

}  // namespace

ProfileRecord profile_steps(Workload& workload, const BatchKey& key, int steps,
                            const std::string& trace_path) {
  // Profiled steps train too: the state before them comes back after, so that the next batch size
  // starts where it would have without them; after a step that threw (out of memory) as well.
  const Workload::State before = workload.save_state();
  try {
    ProfileRecord record = profiled_steps(workload, key, steps, trace_path);
    workload.restore_state(before);
    return record;
  } catch (...) {
    workload.restore_state(before);
    throw;
  }
}

}  // namespace batchscope
