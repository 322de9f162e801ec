#include "lib/timing/profiled_steps.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/version.h>

#include <chrono>
#include <fstream>
#include <set>

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
  const auto scope = static_cast<at::RecordScope>(k.scope());
  if (k.deviceType() == c10::DeviceType::CUDA) {
    e.kind = ProfilerEvent::Kind::kKernel;
  } else if (scope == at::RecordScope::USER_SCOPE) {
    e.kind = ProfilerEvent::Kind::kScope;
  } else if (scope == at::RecordScope::BACKWARD_FUNCTION) {
    e.kind = ProfilerEvent::Kind::kBackwardNode;
  } else {
    e.kind = ProfilerEvent::Kind::kOperator;
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
  std::ofstream out(path, std::ios::trunc);
  out << Json{{"traceEvents", trace_events}, {"displayTimeUnit", "ms"}}.dump() << '\n';
  if (!out) throw std::runtime_error("cannot write the trace " + path);
}

}  // namespace

ProfileRecord profile_steps(Workload& workload, const BatchKey& key, int steps, const std::string& trace_path) {
  const bool cuda = workload.device().is_cuda();
  std::set<ActivityType> activities{ActivityType::CPU};
  if (cuda) activities.insert(ActivityType::CUDA);
  const ProfilerConfig config(ProfilerState::KINETO);

  ProfileRecord record;
  record.key = key;
  std::vector<std::vector<ProfilerEvent>> events(static_cast<std::size_t>(steps));
  double wall_ms = 0;
  // Profiled steps train too: the state before them comes back after, so that the next batch size
  // starts where it would have without them.
  const Workload::State before = workload.save_state();
  {
    ScopesOn scopes;
    profiler::prepareProfiler(config, activities);
    for (int i = 0; i < steps; ++i) {
      workload.stage();
      profiler::enableProfiler(config, activities);
      const auto start = std::chrono::steady_clock::now();
      workload.step();
      workload.synchronize();
      wall_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      const std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
      auto& step_events = events[static_cast<std::size_t>(i)];
      for (const profiler::KinetoEvent& k : result->events()) step_events.push_back(event_of(k));
      if (i == 0 && !trace_path.empty()) {
        try {
          result->save(trace_path);
        } catch (const c10::Error&) {
          write_trace(step_events, trace_path);
        }
        record.trace = trace_path;
      }
    }
  }
  workload.restore_state(before);
  record.step_ms = steps > 0 ? wall_ms / steps : 0;
  attribute_events(events, record);
  record.method = "LibTorch profiler: CPU operators";
  if (cuda) {
    record.method += record.kernel_ms ? " and CUDA kernels" : "; no CUDA kernels were recorded (profiling without CUPTI)";
  }
  return record;
}

}  // namespace batchscope
