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
// layer (and throws std::invalid_argument where the activation is too small for it).
torch::nn::AnyModule instantiate(const Layer& layer, FlopTally& shape);

// Instantiates `layers` in order and registers each on `parent` under its plan name.
std::vector<torch::nn::AnyModule> register_layers(torch::nn::Module& parent, const std::vector<Layer>& layers,
                                                  FlopTally& shape);

torch::Tensor run_layers(std::vector<torch::nn::AnyModule>& modules, torch::Tensor x);

// A kStack layer. nn::Sequential cannot hold another Sequential (its forward is a template), hence a module
// of our own; it registers its children directly so parameter names match the reference models.
class LayerStackImpl : public torch::nn::Module {
 public:
  LayerStackImpl(const Layer& plan, FlopTally& shape);

  torch::Tensor forward(torch::Tensor x);

 private:
  std::vector<torch::nn::AnyModule> children_;
  std::vector<torch::nn::AnyModule> shortcut_;
  bool skip_;
  bool relu_after_add_;
};
TORCH_MODULE(LayerStack);

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
  std::vector<torch::nn::AnyModule> stages_;
};

}  // namespace batchscope::models
