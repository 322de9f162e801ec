#pragma once

#include <string>
#include <vector>

namespace batchscope::models {

// The name of a TorchScript file's operators that its graph executor merged into one differentiable graph
// (batch norms, activations, element-wise operators, with their backward as one node): the profiler
// records the graph, not their modules.
inline constexpr const char* kDifferentiableGraph = "(differentiable graph)";

// The innermost module in a module hierarchy as TorchScript's interpreter gives it for the operator it runs
// (torch::jit::currentModuleHierarchy(), which LibTorch's profiler records too): "TOP(Net)::forward",
// "features(Sequential)::forward", "0(Conv2d)::forward", "SELF(Conv2d)::_conv_forward" is "features.0". A
// method of the same module (SELF) and a free function ("::relu") add no name; an operator of a
// differentiable graph ("TOP()::<forward op>") is kDifferentiableGraph. Empty for an operator of the top
// module itself, of a backward graph, or of none.
std::string module_path(const std::vector<std::string>& hierarchy);

}  // namespace batchscope::models
