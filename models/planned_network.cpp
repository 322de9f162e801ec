#include "models/planned_network.h"

#include <cstdint>
#include <string>
#include <vector>

#include "models/layer_scope.h"
#include "models/portable_dropout.h"
#include "models/splittable_conv.h"

namespace batchscope::models {

torch::nn::AnyModule instantiate(const Layer& layer, FlopTally& shape, const std::string& path) {
  namespace nn = torch::nn;
  const std::vector<int64_t> in = shape.shape();
  nn::AnyModule module;
  switch (layer.kind) {
    case Layer::Kind::kConv:
      module = nn::AnyModule(SplittableConv2d(nn::Conv2dOptions(in.at(0), layer.out, layer.kernel)
                                                  .stride(layer.stride)
                                                  .padding(layer.padding)
                                                  .groups(layer.groups)
                                                  .bias(layer.bias)));
      break;
    case Layer::Kind::kBatchNorm:
      module = nn::AnyModule(nn::BatchNorm2d(in.at(0)));
      break;
    // In place, as the reference models do; plans put it after layers whose backward does not read
    // their output.
    case Layer::Kind::kReLU:
      module = nn::AnyModule(nn::ReLU(nn::ReLUOptions().inplace(true)));
      break;
    case Layer::Kind::kReLU6:
      module = nn::AnyModule(nn::ReLU6(nn::ReLU6Options().inplace(true)));
      break;
    case Layer::Kind::kMaxPool:
      module = nn::AnyModule(
          nn::MaxPool2d(nn::MaxPool2dOptions(layer.kernel).stride(layer.stride).padding(layer.padding)));
      break;
    case Layer::Kind::kAdaptiveAvgPool:
      module = nn::AnyModule(
          nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({layer.out_height, layer.out_width})));
      break;
    case Layer::Kind::kFlatten:
      module = nn::AnyModule(nn::Flatten());
      break;
    case Layer::Kind::kDropout:
      module = nn::AnyModule(PortableDropout(nn::DropoutOptions(layer.probability)));
      break;
    case Layer::Kind::kLinear:
      TORCH_CHECK(in.size() == 1, "a linear layer needs a flat activation; put a flatten before it");
      module = nn::AnyModule(nn::Linear(nn::LinearOptions(in[0], layer.out).bias(layer.bias)));
      break;
    case Layer::Kind::kStack:
      // The stack advances the shape itself, child by child.
      return nn::AnyModule(LayerStack(layer, shape, path));
  }
  tally_layer(shape, layer);
  return module;
}

LayerList register_layers(torch::nn::Module& parent, const std::vector<Layer>& layers, FlopTally& shape,
                          const std::string& prefix) {
  LayerList list;
  for (const Layer& layer : layers) {
    const std::string name = layer.name.empty() ? std::to_string(list.modules.size()) : layer.name;
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    list.modules.push_back(instantiate(layer, shape, path));
    list.paths.push_back(path);
    parent.register_module(name, list.modules.back().ptr());
  }
  return list;
}

torch::Tensor run_layers(LayerList& layers, torch::Tensor x) {
  for (std::size_t i = 0; i < layers.modules.size(); ++i) {
    LayerScope scope(layers.paths[i]);
    x = layers.modules[i].forward(x);
  }
  return x;
}

LayerStackImpl::LayerStackImpl(const Layer& plan, FlopTally& shape, const std::string& path)
    : skip_(plan.skip), relu_after_add_(plan.relu_after_add) {
  FlopTally shortcut_shape(shape.shape());
  children_ = register_layers(*this, plan.children, shape, path);
  shortcut_ = register_layers(*this, plan.shortcut, shortcut_shape, path);
  TORCH_CHECK(!skip_ || shortcut_shape.shape() == shape.shape(),
              "a residual stack changes the activation shape without a shortcut that matches it");
}

torch::Tensor LayerStackImpl::forward(torch::Tensor x) {
  torch::Tensor out = run_layers(children_, x);
  if (!skip_) return out;
  // Out of place: the last child may need its output for its own backward.
  out = out + run_layers(shortcut_, x);
  return relu_after_add_ ? torch::relu_(out) : out;
}

void initialize(torch::nn::Module& network, WeightInit init) {
  if (init == WeightInit::kLayerDefaults) return;
  const torch::NoGradGuard no_grad;
  for (const std::shared_ptr<torch::nn::Module>& module : network.modules(/*include_self=*/false)) {
    if (auto* conv = dynamic_cast<torch::nn::Conv2dImpl*>(module.get())) {
      torch::nn::init::kaiming_normal_(conv->weight, 0, torch::kFanOut, torch::kReLU);
      if (conv->bias.defined()) torch::nn::init::zeros_(conv->bias);
    } else if (auto* norm = dynamic_cast<torch::nn::BatchNorm2dImpl*>(module.get())) {
      torch::nn::init::ones_(norm->weight);
      torch::nn::init::zeros_(norm->bias);
    } else if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(module.get());
               linear != nullptr && init == WeightInit::kKaimingFanOutSmallLinear) {
      torch::nn::init::normal_(linear->weight, 0, 0.01);
      if (linear->bias.defined()) torch::nn::init::zeros_(linear->bias);
    }
  }
}

PlannedNetwork::PlannedNetwork(const Layer& plan, const std::vector<int64_t>& sample_shape) {
  TORCH_CHECK(plan.kind == Layer::Kind::kStack && !plan.skip, "a network plan is a plain stack of layers");
  FlopTally shape(sample_shape);
  stages_ = register_layers(*this, plan.children, shape, "");
}

torch::Tensor PlannedNetwork::forward(torch::Tensor input) { return run_layers(stages_, input); }

std::vector<std::vector<int64_t>> PlannedNetwork::stage_shapes(torch::Tensor input) {
  std::vector<std::vector<int64_t>> shapes;
  for (auto& stage : stages_.modules) {
    input = stage.forward(input);
    shapes.emplace_back(input.sizes().begin() + 1, input.sizes().end());
  }
  return shapes;
}

}  // namespace batchscope::models
