#pragma once

#include <ATen/record_function.h>

#include <atomic>
#include <optional>
#include <string>

namespace batchscope::models {

// Whether layers and step parts open their named ranges. Only profiled steps turn it on
// (lib/timing/profiled_steps.cpp); outside them a scope costs one relaxed load, so the timed steps
// run exactly as they would without scopes.
inline std::atomic<bool> layer_scopes_on{false};

// A named range around one layer's forward (its module name as torchvision registers it:
// "features.0", "layer1.0.conv1") or one part of a step ("step.loss"), recorded by LibTorch's profiler
// as a user scope. The backward of a layer's operators is mapped to the layer afterwards, through the
// sequence number autograd gives each forward operator and its backward node.
class LayerScope {
 public:
  explicit LayerScope(const std::string& name) {
    if (!layer_scopes_on.load(std::memory_order_relaxed)) return;
    range_.emplace(at::RecordScope::USER_SCOPE);
    if (range_->isActive()) range_->before(name);
  }
  LayerScope(const LayerScope&) = delete;
  LayerScope& operator=(const LayerScope&) = delete;

 private:
  std::optional<at::RecordFunction> range_;
};

}  // namespace batchscope::models
