#include "lib/timing/profile_attribution.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace batchscope {
namespace {

constexpr const char* kEvaluateFunction = "autograd::engine::evaluate_function: ";

using Owner = std::pair<std::string, std::string>;  // layer, pass

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

// The step's forward scope (lib/timing/step_runner.cpp), inside which a TorchScript file's modules run.
constexpr const char* kForwardScope = "step.forward";

// Parents first: by start, the longer first where two start together.
void sort_parents_first(std::vector<const ProfilerEvent*>& events) {
  std::stable_sort(events.begin(), events.end(), [](const ProfilerEvent* a, const ProfilerEvent* b) {
    return a->start_us != b->start_us ? a->start_us < b->start_us : a->duration_us > b->duration_us;
  });
}

// A scope of each run of consecutive operators of one module inside a forward scope on a thread, spanning
// the run's outermost operators. An event without a module ends a run; a run also ends where an event
// around its first operator ends, so that every scope nests in the events around it.
std::vector<ProfilerEvent> module_scopes(const std::vector<ProfilerEvent>& step) {
  std::map<uint64_t, std::vector<const ProfilerEvent*>> by_thread;
  bool any = false;
  for (const ProfilerEvent& e : step) {
    if (e.kind == ProfilerEvent::Kind::kKernel) continue;
    by_thread[e.thread].push_back(&e);
    any = any || !e.module.empty();
  }
  std::vector<ProfilerEvent> scopes;
  if (!any) return scopes;
  for (auto& [thread, events] : by_thread) {
    sort_parents_first(events);
    struct Open {
      double end;
      bool forward;
    };
    std::vector<Open> open;  // the events without a module around the present instant
    ProfilerEvent run;       // the scope of the present run, where `in_run`
    bool in_run = false;
    std::size_t run_depth = 0;  // how many of `open` were around the run's first operator
    double run_end = 0;
    const auto close = [&] {
      if (in_run) scopes.push_back(run);
      in_run = false;
    };
    for (const ProfilerEvent* e : events) {
      const double end = e->start_us + e->duration_us;
      while (!open.empty() && open.back().end <= e->start_us) open.pop_back();
      if (in_run && open.size() < run_depth) close();
      if (in_run && e->start_us < run_end) continue;  // inside an operator of the run
      const bool in_forward = std::any_of(open.begin(), open.end(), [](const Open& o) { return o.forward; });
      if (e->module.empty() || e->kind != ProfilerEvent::Kind::kOperator || !in_forward) {
        close();
        open.push_back({end, e->kind == ProfilerEvent::Kind::kScope && e->name == kForwardScope});
        continue;
      }
      if (in_run && run.name == e->module) {
        run.duration_us = std::max(run.duration_us, end - run.start_us);
        run_end = std::max(run_end, end);
        continue;
      }
      close();
      run = ProfilerEvent{};
      run.kind = ProfilerEvent::Kind::kScope;
      run.name = run.module = e->module;
      run.start_us = e->start_us;
      run.duration_us = e->duration_us;
      run.thread = thread;
      in_run = true;
      run_depth = open.size();
      run_end = end;
    }
    close();
  }
  return scopes;
}

// The events of one step on the host, each with the innermost event around it on its thread.
struct HostTree {
  std::vector<const ProfilerEvent*> events;
  std::vector<int> parent;  // index into events, -1 at the top
};

HostTree host_tree(const std::vector<ProfilerEvent>& step) {
  std::map<uint64_t, std::vector<const ProfilerEvent*>> by_thread;
  for (const ProfilerEvent& e : step) {
    if (e.kind != ProfilerEvent::Kind::kKernel) by_thread[e.thread].push_back(&e);
  }
  HostTree tree;
  for (auto& [thread, events] : by_thread) {
    sort_parents_first(events);
    std::vector<int> open;
    for (const ProfilerEvent* e : events) {
      while (!open.empty()) {
        const ProfilerEvent* top = tree.events[static_cast<std::size_t>(open.back())];
        if (e->start_us < top->start_us + top->duration_us) break;
        open.pop_back();
      }
      tree.parent.push_back(open.empty() ? -1 : open.back());
      open.push_back(static_cast<int>(tree.events.size()));
      tree.events.push_back(e);
    }
  }
  return tree;
}

bool is_owner(const HostTree& tree, int i) {
  const ProfilerEvent& e = *tree.events[static_cast<std::size_t>(i)];
  if (e.kind == ProfilerEvent::Kind::kScope) return true;
  if (e.kind != ProfilerEvent::Kind::kBackwardNode && !starts_with(e.name, kEvaluateFunction)) return false;
  // A node inside its engine wrapper belongs to the wrapper.
  const int p = tree.parent[static_cast<std::size_t>(i)];
  return p < 0 || !starts_with(tree.events[static_cast<std::size_t>(p)]->name, kEvaluateFunction);
}

int owner_of(const HostTree& tree, const std::vector<bool>& owner, int i) {
  for (int p = i; p >= 0; p = tree.parent[static_cast<std::size_t>(p)]) {
    if (owner[static_cast<std::size_t>(p)]) return p;
  }
  return -1;
}

// Totals of all steps, in the order each was first met.
struct Totals {
  std::vector<Owner> layer_order;
  std::map<Owner, LayerTime> layers;
  std::map<Owner, std::vector<std::string>> kernel_order;
  std::map<std::pair<Owner, std::string>, KernelTime> kernels;
  double kernel_ms = 0;
  bool any_kernel = false;
  bool any_device_span = false;  // CUDA-event times instead of kernels

  LayerTime& layer(const Owner& o) {
    auto [it, fresh] = layers.try_emplace(o);
    if (fresh) {
      layer_order.push_back(o);
      it->second.layer = o.first;
      it->second.pass = o.second;
    }
    return it->second;
  }

  void add_kernel(const Owner& o, const std::string& name, const char* kind, double ms) {
    auto [it, fresh] = kernels.try_emplace({o, name});
    if (fresh) {
      kernel_order[o].push_back(name);
      layer(o);
      it->second = {o.first, o.second, name, kind, 0, 0, 0, "", ""};
    }
    it->second.count += 1;
    it->second.total_ms += ms;
  }
};

void add_step(const std::vector<ProfilerEvent>& recorded, Totals& totals) {
  // A module's scope goes before the events it holds, so that it is the parent of an operator it
  // spans exactly.
  std::vector<ProfilerEvent> with_modules = module_scopes(recorded);
  if (!with_modules.empty()) with_modules.insert(with_modules.end(), recorded.begin(), recorded.end());
  const std::vector<ProfilerEvent>& step = with_modules.empty() ? recorded : with_modules;
  const HostTree tree = host_tree(step);
  const auto n = static_cast<int>(tree.events.size());
  std::vector<bool> owner(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) owner[static_cast<std::size_t>(i)] = is_owner(tree, i);

  // Forward operators name the layer of each sequence number, for the backward nodes. An operator that
  // makes no autograd node (a differentiable graph's, which run without autograd, among them) records
  // the number the next node will take, so the number is the layer's of the last operator in time that
  // recorded it: the one that made the node.
  std::unordered_map<int64_t, std::string> layer_of_sequence;
  for (int i = 0; i < n; ++i) {
    const ProfilerEvent& e = *tree.events[static_cast<std::size_t>(i)];
    if (e.kind != ProfilerEvent::Kind::kOperator || e.sequence < 0) continue;
    const int o = owner_of(tree, owner, i);
    if (o < 0 || tree.events[static_cast<std::size_t>(o)]->kind != ProfilerEvent::Kind::kScope) continue;
    layer_of_sequence[e.sequence] = tree.events[static_cast<std::size_t>(o)]->name;
  }
  const auto owner_name = [&](int o) -> Owner {
    if (o < 0) return {"(outside scopes)", profile_pass::kStep};
    const ProfilerEvent& e = *tree.events[static_cast<std::size_t>(o)];
    if (e.kind == ProfilerEvent::Kind::kScope) {
      const bool step_part = e.module.empty() && starts_with(e.name, "step.");
      return {e.name, step_part ? profile_pass::kStep : profile_pass::kForward};
    }
    // A differentiable graph's backward node takes its sequence number before the graph's operators run
    // (they record the next), so it shares it with any operator run just before that made no node: it is
    // the graph's backward, whatever modules the graph held.
    if (e.name.find("DifferentiableGraphBackward") != std::string::npos)
      return {kDifferentiableGraph, profile_pass::kBackward};
    const auto found = layer_of_sequence.find(e.sequence);
    if (e.sequence >= 0 && found != layer_of_sequence.end()) return {found->second, profile_pass::kBackward};
    if (e.name.find("AccumulateGrad") != std::string::npos)
      return {"(accumulate grad)", profile_pass::kBackward};
    return {"(unattributed)", profile_pass::kBackward};
  };

  // Owned time: an owner's span less the owners directly inside it on its thread.
  std::vector<double> owned_us(static_cast<std::size_t>(n), 0.0);
  std::vector<double> owned_device_us(static_cast<std::size_t>(n), 0.0);
  std::vector<double> child_us(static_cast<std::size_t>(n), 0.0);
  bool device_spans = false;
  for (int i = 0; i < n; ++i) {
    const ProfilerEvent& e = *tree.events[static_cast<std::size_t>(i)];
    const int p = tree.parent[static_cast<std::size_t>(i)];
    if (p >= 0) child_us[static_cast<std::size_t>(p)] += e.duration_us;
    if (!owner[static_cast<std::size_t>(i)]) continue;
    const int above = p < 0 ? -1 : owner_of(tree, owner, p);
    owned_us[static_cast<std::size_t>(i)] += e.duration_us;
    if (above >= 0) owned_us[static_cast<std::size_t>(above)] -= e.duration_us;
    if (e.device_us >= 0) {
      device_spans = true;
      owned_device_us[static_cast<std::size_t>(i)] += e.device_us;
      if (above >= 0) owned_device_us[static_cast<std::size_t>(above)] -= e.device_us;
    }
  }
  totals.any_device_span = totals.any_device_span || device_spans;
  // On a GPU the backward pass runs on the autograd engine's own thread while the step's backward scope
  // waits for it: the owners at the top of another thread within a scope's span are taken from the
  // scope's own time, as nested owners on its thread are, so nothing is counted twice.
  for (int i = 0; i < n; ++i) {
    const ProfilerEvent& s = *tree.events[static_cast<std::size_t>(i)];
    if (!owner[static_cast<std::size_t>(i)] || s.kind != ProfilerEvent::Kind::kScope) continue;
    for (int j = 0; j < n; ++j) {
      const ProfilerEvent& o = *tree.events[static_cast<std::size_t>(j)];
      const int p = tree.parent[static_cast<std::size_t>(j)];
      if (!owner[static_cast<std::size_t>(j)] || o.thread == s.thread ||
          (p >= 0 && owner_of(tree, owner, p) >= 0))
        continue;
      if (o.start_us < s.start_us || o.start_us >= s.start_us + s.duration_us) continue;
      owned_us[static_cast<std::size_t>(i)] -= o.duration_us;
      if (o.device_us >= 0) owned_device_us[static_cast<std::size_t>(i)] -= o.device_us;
    }
  }
  std::unordered_map<uint64_t, Owner> owner_of_correlation;
  for (int i = 0; i < n; ++i) {
    const ProfilerEvent& e = *tree.events[static_cast<std::size_t>(i)];
    const Owner o = owner_name(owner_of(tree, owner, i));
    if (owner[static_cast<std::size_t>(i)]) {
      LayerTime& layer = totals.layer(o);
      layer.calls += 1;
      layer.cpu_ms += std::max(0.0, owned_us[static_cast<std::size_t>(i)]) / 1000.0;
      if (device_spans) {
        const double device_ms = std::max(0.0, owned_device_us[static_cast<std::size_t>(i)]) / 1000.0;
        layer.device_ms = layer.device_ms.value_or(0.0) + device_ms;
        totals.kernel_ms += device_ms;
      }
    }
    if (e.correlation != 0) owner_of_correlation.emplace(e.correlation, o);
    if (e.kind == ProfilerEvent::Kind::kOperator || e.kind == ProfilerEvent::Kind::kBackwardNode) {
      if (starts_with(e.name, kEvaluateFunction)) continue;
      const double self_us = e.duration_us - child_us[static_cast<std::size_t>(i)];
      if (self_us > 0) totals.add_kernel(o, e.name, "operator", self_us / 1000.0);
    }
  }
  // The profiler copies each of our scopes onto the GPU's timeline as a span over its kernels (Kineto's
  // GPU user annotations, device events like the kernels): they are no kernels, and counting them would
  // count those kernels twice (VGG16 on an H100: 16.6 ms of a 51 ms step). They bear their scope's name.
  std::unordered_set<std::string> scope_names;
  for (const ProfilerEvent& e : step) {
    if (e.kind == ProfilerEvent::Kind::kScope) scope_names.insert(e.name);
  }
  const auto is_kernel = [&scope_names](const ProfilerEvent& e) {
    return e.kind == ProfilerEvent::Kind::kKernel && scope_names.count(e.name) == 0;
  };
  for (const ProfilerEvent& e : step) {
    if (!is_kernel(e)) continue;
    const auto found = owner_of_correlation.find(e.linked_correlation);
    const Owner o =
        found == owner_of_correlation.end() ? Owner{"(unattributed)", profile_pass::kStep} : found->second;
    totals.any_kernel = true;
    totals.kernel_ms += e.duration_us / 1000.0;
    LayerTime& layer = totals.layer(o);
    layer.device_ms = layer.device_ms.value_or(0.0) + e.duration_us / 1000.0;
  }
  // Kernels replace operators in the table where there are kernels: a second pass, so that the
  // operators' entries can be dropped per owner.
  for (const ProfilerEvent& e : step) {
    if (!is_kernel(e)) continue;
    const auto found = owner_of_correlation.find(e.linked_correlation);
    const Owner o =
        found == owner_of_correlation.end() ? Owner{"(unattributed)", profile_pass::kStep} : found->second;
    totals.add_kernel(o, e.name, "kernel", e.duration_us / 1000.0);
  }
}

}  // namespace

void attribute_events(const std::vector<std::vector<ProfilerEvent>>& steps, ProfileRecord& out) {
  Totals totals;
  for (const auto& step : steps) add_step(step, totals);
  const double n = steps.empty() ? 1.0 : static_cast<double>(steps.size());
  out.steps = static_cast<int64_t>(steps.size());
  out.layers.clear();
  out.kernels.clear();
  out.kernel_ms.reset();
  if (totals.any_kernel || totals.any_device_span) out.kernel_ms = totals.kernel_ms / n;
  for (const Owner& o : totals.layer_order) {
    LayerTime layer = totals.layers.at(o);
    layer.calls /= n;
    layer.cpu_ms /= n;
    if (layer.device_ms) *layer.device_ms /= n;
    if ((totals.any_kernel || totals.any_device_span) && !layer.device_ms) layer.device_ms = 0.0;
    out.layers.push_back(layer);

    // Device kernels where the profiler saw any, else the host operators; the longest first.
    const char* kind = totals.any_kernel ? "kernel" : "operator";
    std::vector<KernelTime> items;
    for (const std::string& name : totals.kernel_order[o]) {
      const KernelTime& k = totals.kernels.at({o, name});
      if (k.kind == kind) items.push_back(k);
    }
    std::stable_sort(items.begin(), items.end(),
                     [](const KernelTime& a, const KernelTime& b) { return a.total_ms > b.total_ms; });
    KernelTime other{o.first, o.second, "(other)", kind, 0, 0, 0, "", ""};
    for (std::size_t i = 0; i < items.size(); ++i) {
      KernelTime k = items[i];
      k.count /= n;
      k.total_ms /= n;
      if (i >= kKernelsPerLayer) {
        other.count += k.count;
        other.total_ms += k.total_ms;
        continue;
      }
      k.mean_ms = k.count > 0 ? k.total_ms / k.count : 0;
      out.kernels.push_back(std::move(k));
    }
    if (other.count > 0) {
      other.mean_ms = other.total_ms / other.count;
      out.kernels.push_back(std::move(other));
    }
  }
}

}  // namespace batchscope
