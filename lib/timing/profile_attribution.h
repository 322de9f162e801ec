#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/records/profile_records.h"
#include "models/module_hierarchy.h"

namespace batchscope {

// One event of a profiled step, as LibTorch's profiler reports it, in the few fields attribution needs.
struct ProfilerEvent {
  enum class Kind {
    kScope,         // a named range of ours (models/layer_scope.h): a layer or a part of the step
    kOperator,      // an ATen operator
    kBackwardNode,  // an autograd node run by the backward pass, with its forward operator's sequence number
    kKernel,        // a device kernel, memcpy or memset
  };
  Kind kind = Kind::kOperator;
  std::string name;
  double start_us = 0, duration_us = 0;
  uint64_t thread = 0;
  int64_t sequence = -1;  // autograd's sequence number; -1 for none
  uint64_t correlation = 0;
  uint64_t linked_correlation = 0;  // a kernel's: the correlation of the operator that launched it
  // GPU time between CUDA events recorded at the event's start and end (the fallback where the profiler
  // records no kernels); negative where unknown.
  double device_us = -1;
  // The module of a TorchScript file an operator ran in ("features.0"; module_path), where the profiler
  // recorded module hierarchies; empty for none.
  std::string module;
};

// A TorchScript file's modules and its differentiable graphs, by the names its layers take.
using models::kDifferentiableGraph;
using models::module_path;

// Operators or kernels kept per layer and pass, the longest first; the rest are summed as "(other)".
inline constexpr std::size_t kKernelsPerLayer = 8;

// Adds up the events of profiled steps (one vector per step) into the per-step figures of `out`
// (layers, kernels, kernel_ms; `out.steps` is set to the number of steps).
//
// Every instant of a host thread belongs to the innermost scope or backward node around it. A forward
// layer owns its scope less the scopes nested in it; a backward node belongs to the layer whose scope
// held the forward operator with the node's sequence number (the pairing autograd records), an
// AccumulateGrad node to "(accumulate grad)", a TorchScript differentiable graph's to
// kDifferentiableGraph, and any other to "(unattributed)". An operator's self time
// (less the operators it called) and a kernel's device time go to the owner of the operator: for a
// kernel, the operator whose correlation the kernel is linked to. Without kernels, where the events carry
// CUDA-event times (device_us), a layer's device time is owned the same way as its host time: its span
// on the GPU less the spans of the owners nested in it. A TorchScript file's operators name their module
// instead of running in our layer scopes: each run of consecutive operators of one module inside the
// step's forward scope is taken as a scope of that module, so that they, their kernels and their backward
// nodes are attributed as a zoo layer's are.
void attribute_events(const std::vector<std::vector<ProfilerEvent>>& steps, ProfileRecord& out);

}  // namespace batchscope
