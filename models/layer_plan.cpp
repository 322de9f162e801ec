#include "models/layer_plan.h"

#include <c10/util/Exception.h>

#include <cstdint>
#include <vector>

namespace batchscope::models {

void tally_layer(FlopTally& tally, const Layer& layer) {
  switch (layer.kind) {
    case Layer::Kind::kConv:
      tally.conv2d(layer.out, layer.kernel, layer.stride, layer.padding, layer.groups, layer.bias);
      return;
    case Layer::Kind::kBatchNorm:
      tally.batchnorm();
      return;
    case Layer::Kind::kReLU:
    case Layer::Kind::kReLU6:
      tally.relu();
      return;
    case Layer::Kind::kMaxPool:
      tally.maxpool(layer.kernel, layer.stride, layer.padding);
      return;
    case Layer::Kind::kAdaptiveAvgPool:
      tally.adaptive_avgpool(layer.out_height, layer.out_width);
      return;
    case Layer::Kind::kFlatten:
      tally.flatten();
      return;
    case Layer::Kind::kDropout:
      tally.dropout();
      return;
    case Layer::Kind::kLinear:
      tally.linear(layer.out, layer.bias);
      return;
    case Layer::Kind::kStack: {
      FlopTally shortcut(tally.shape());
      for (const Layer& child : layer.shortcut) tally_layer(shortcut, child);
      for (const Layer& child : layer.children) tally_layer(tally, child);
      if (!layer.skip) return;
      TORCH_CHECK(shortcut.shape() == tally.shape(), "a residual stack changes the activation shape ",
                  "without a shortcut that matches it");
      tally.absorb(shortcut);
      tally.add();
      if (layer.relu_after_add) tally.relu();
      return;
    }
  }
  TORCH_CHECK(false, "unknown layer kind");
}

int64_t count_flops(const Layer& plan, const std::vector<int64_t>& sample_shape) {
  FlopTally tally(sample_shape);
  tally_layer(tally, plan);
  return tally.total();
}

int64_t data_gradient_flops(const Layer& plan, const std::vector<int64_t>& sample_shape) {
  const Layer* first = &plan;
  while (first->kind == Layer::Kind::kStack) {
    // A first block with a shortcut sends the data down two branches: neither is the data's only layer.
    if (first->children.empty() || !first->shortcut.empty()) return 0;
    first = &first->children.front();
  }
  if (first->kind != Layer::Kind::kConv && first->kind != Layer::Kind::kLinear) return 0;
  Layer gemm = *first;
  gemm.bias = false;
  FlopTally tally(sample_shape);
  tally_layer(tally, gemm);
  return tally.total();
}

int64_t smallest_norm_plane(const Layer& plan, const std::vector<int64_t>& sample_shape) {
  FlopTally tally(sample_shape);
  tally_layer(tally, plan);
  return tally.smallest_norm_plane();
}

}  // namespace batchscope::models
