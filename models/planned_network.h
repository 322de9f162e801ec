#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "models/flop_tally.h"
#include "models/layer_plan.h"
#include "models/network.h"

namespace batchscope::models {

// The module for one plan layer, sized for the activation `shape` holds, which it then advances past the
// layer (and throws std::invalid_argument where the activation is too small for it). `path` is its full
// module name in the network ("features.0"), which the profiler's scopes carry.
torch::nn::AnyModule instantiate(const Layer& layer, FlopTally& shape, const std::string& path);

// Layers registered on a parent, in order, with their full module names.
struct LayerList {
  std::vector<torch::nn::AnyModule> modules;
  std::vector<std::string> paths;
};

// Instantiates `layers` in order and registers each on `parent` under its plan name; `prefix` is the
// parent's own path ("" for the network).
LayerList register_layers(torch::nn::Module& parent, const std::vector<Layer>& layers, FlopTally& shape,
                          const std::string& prefix);

// Runs the layers in order, each in its named scope (see models/layer_scope.h).
torch::Tensor run_layers(LayerList& layers, torch::Tensor x);

// A kStack layer. nn::Sequential cannot hold another Sequential (its forward is a template), hence a module
// of our own; it registers its children directly so parameter names match the reference models.
class LayerStackImpl : public torch::nn::Module {
 public:
  LayerStackImpl(const Layer& plan, FlopTally& shape, const std::string& path);

  torch::Tensor forward(torch::Tensor x);

 private:
  LayerList children_;
  LayerList shortcut_;
  bool skip_;
  bool relu_after_add_;
};
TORCH_MODULE(LayerStack);

// How a model's weights start: as its reference model initialises them, so that a run trains from where
// PyTorch's would (the same distributions, not the same draws).
enum class WeightInit {
  kLayerDefaults,  // each layer's own reset (AlexNet, the MNIST CNN, MobileNet v1: as their references)
  // torchvision's ResNet: convolutions kaiming-normal over their fan-out (ReLU's gain), their biases 0;
  // batch norms 1 and 0; linear layers their own reset.
  kKaimingFanOut,
  // torchvision's VGG and MobileNetV2: the same, and linear layers N(0, 0.01) with biases 0.
  kKaimingFanOutSmallLinear,
};

// Draws the weights of every convolution, batch norm and linear layer of `network` as `init` says, from
// LibTorch's global generator.
void initialize(torch::nn::Module& network, WeightInit init);

// A whole model built from its plan (a kStack without skip). The top-level layers are registered on the
// network itself, so parameter names read like the reference models' (features.0.weight,
// layer1.0.conv1.weight).
class PlannedNetwork : public Network {
 public:
  PlannedNetwork(const Layer& plan, const std::vector<int64_t>& sample_shape);

  torch::Tensor forward(torch::Tensor input) override;

  // The sample shape after every top-level layer in turn, to check against the tally's.
  std::vector<std::vector<int64_t>> stage_shapes(torch::Tensor input);

 private:
  LayerList stages_;
};

}  // namespace batchscope::models
