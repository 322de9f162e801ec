#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/flop_tally.h"

namespace batchscope::models {

// One step of an architecture, as data. Each model expands its table into a tree of these; the same tree
// is instantiated into modules (models/planned_network.h) and walked by the FLOP tally (tally_layer), so
// the network that runs and the FLOPs reported for it come from a single description. Input channels and
// feature counts are absent on purpose: they follow from the shape the plan is built for.
struct Layer {
  enum class Kind {
    kConv,
    kBatchNorm,
    kReLU,
    kReLU6,
    kMaxPool,
    kAdaptiveAvgPool,
    kFlatten,
    kDropout,
    kLinear,
    kStack
  };

  Kind kind = Kind::kStack;
  // Registered under this name in its parent; empty means its position there, as in nn.Sequential.
  std::string name;
  int64_t out = 0;  // conv output channels, linear output features
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t groups = 1;
  bool bias = false;
  int64_t out_height = 0;  // adaptive pool
  int64_t out_width = 0;
  double probability = 0;  // dropout
  // kStack runs its children in order. With a skip, the stack's input, passed through the shortcut
  // layers when there are any, is added to their output, followed by a ReLU when relu_after_add is set.
  std::vector<Layer> children;
  std::vector<Layer> shortcut;
  bool skip = false;
  bool relu_after_add = false;
};

inline Layer layer_of(Layer::Kind kind) {
  Layer layer;
  layer.kind = kind;
  return layer;
}

inline Layer conv(int64_t out, int64_t kernel, int64_t stride = 1, int64_t padding = 0, int64_t groups = 1,
                  bool bias = true) {
  Layer layer = layer_of(Layer::Kind::kConv);
  layer.out = out;
  layer.kernel = kernel;
  layer.stride = stride;
  layer.padding = padding;
  layer.groups = groups;
  layer.bias = bias;
  return layer;
}

inline Layer batch_norm() { return layer_of(Layer::Kind::kBatchNorm); }
inline Layer relu() { return layer_of(Layer::Kind::kReLU); }
inline Layer relu6() { return layer_of(Layer::Kind::kReLU6); }
inline Layer flatten() { return layer_of(Layer::Kind::kFlatten); }

inline Layer max_pool(int64_t kernel, int64_t stride, int64_t padding = 0) {
  Layer layer = layer_of(Layer::Kind::kMaxPool);
  layer.kernel = kernel;
  layer.stride = stride;
  layer.padding = padding;
  return layer;
}

inline Layer adaptive_avg_pool(int64_t out_height, int64_t out_width) {
  Layer layer = layer_of(Layer::Kind::kAdaptiveAvgPool);
  layer.out_height = out_height;
  layer.out_width = out_width;
  return layer;
}

inline Layer dropout(double probability) {
  Layer layer = layer_of(Layer::Kind::kDropout);
  layer.probability = probability;
  return layer;
}

inline Layer linear(int64_t out, bool bias = true) {
  Layer layer = layer_of(Layer::Kind::kLinear);
  layer.out = out;
  layer.bias = bias;
  return layer;
}

inline Layer stack(std::vector<Layer> children) {
  Layer layer = layer_of(Layer::Kind::kStack);
  layer.children = std::move(children);
  return layer;
}

// An empty shortcut is the identity.
inline Layer residual(std::vector<Layer> children, std::vector<Layer> shortcut, bool relu_after_add) {
  Layer layer = stack(std::move(children));
  layer.shortcut = std::move(shortcut);
  layer.skip = true;
  layer.relu_after_add = relu_after_add;
  return layer;
}

inline Layer named(std::string name, Layer layer) {
  layer.name = std::move(name);
  return layer;
}

// Advances `tally` through `layer`: the activation shape, and the FLOPs under its conventions.
void tally_layer(FlopTally& tally, const Layer& layer);

// The forward FLOPs of one sample of `sample_shape` through `plan`.
int64_t count_flops(const Layer& plan, const std::vector<int64_t>& sample_shape);
// The FLOPs of one sample's data gradient through the plan's first layer, where that layer is a
// convolution or a linear layer taking the data itself: a training step never computes it (the data needs
// no gradient), though the rest of its backward pass is about twice its forward. The layer's GEMM, bias
// left out; 0 where the plan begins otherwise.
int64_t data_gradient_flops(const Layer& plan, const std::vector<int64_t>& sample_shape);
// The fewest values per channel any batch norm layer of `plan` sees in one sample; INT64_MAX if none.
int64_t smallest_norm_plane(const Layer& plan, const std::vector<int64_t>& sample_shape);

}  // namespace batchscope::models
