#include <c10/util/Exception.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/zoo.h"

namespace batchscope::models {
namespace {

struct ResNetConfig {
  int depth;
  std::array<int64_t, 4> blocks;  // blocks per stage
  bool bottleneck;                // 1x1-3x3-1x1 blocks (x4 channels), else two 3x3 (basic blocks)
};

constexpr std::array<ResNetConfig, 2> kConfigs = {{{18, {2, 2, 2, 2}, false}, {50, {3, 4, 6, 3}, true}}};

struct Stage {
  int64_t planes;
  int64_t stride;
};
constexpr std::array<Stage, 4> kStages = {{{64, 1}, {128, 2}, {256, 2}, {512, 2}}};
constexpr int64_t kExpansion = 4;
constexpr int64_t kStemChannels = 64;

// Every convolution is followed by batch norm, which makes a bias redundant; "same" padding throughout.
Layer conv_no_bias(int64_t out, int64_t kernel, int64_t stride = 1) {
  return conv(out, kernel, stride, kernel / 2, 1, false);
}

Layer bottleneck(int64_t in, int64_t planes, int64_t stride) {
  const int64_t out = planes * kExpansion;
  std::vector<Layer> shortcut;
  if (stride != 1 || in != out) {
    shortcut.push_back(named("downsample", stack({conv_no_bias(out, 1, stride), batch_norm()})));
  }
  return residual(
      {
          named("conv1", conv_no_bias(planes, 1)),
          named("bn1", batch_norm()),
          named("relu1", relu()),
          named("conv2", conv_no_bias(planes, 3, stride)),
          named("bn2", batch_norm()),
          named("relu2", relu()),
          named("conv3", conv_no_bias(out, 1)),
          named("bn3", batch_norm()),
      },
      std::move(shortcut), true);
}

Layer basic_block(int64_t in, int64_t planes, int64_t stride) {
  std::vector<Layer> shortcut;
  if (stride != 1 || in != planes) {
    shortcut.push_back(named("downsample", stack({conv_no_bias(planes, 1, stride), batch_norm()})));
  }
  return residual(
      {
          named("conv1", conv_no_bias(planes, 3, stride)),
          named("bn1", batch_norm()),
          named("relu", relu()),
          named("conv2", conv_no_bias(planes, 3)),
          named("bn2", batch_norm()),
      },
      std::move(shortcut), true);
}

}  // namespace

Layer resnet_plan(int depth, int64_t classes) {
  const ResNetConfig* config = nullptr;
  for (const ResNetConfig& candidate : kConfigs) {
    if (candidate.depth == depth) config = &candidate;
  }
  TORCH_CHECK(config != nullptr, "no ResNet configuration of depth ", depth);

  std::vector<Layer> layers = {
      named("conv1", conv_no_bias(kStemChannels, 7, 2)),
      named("bn1", batch_norm()),
      named("relu", relu()),
      named("maxpool", max_pool(3, 2, 1)),
  };
  int64_t channels = kStemChannels;
  for (size_t s = 0; s < kStages.size(); ++s) {
    std::vector<Layer> blocks;
    for (int64_t b = 0; b < config->blocks[s]; ++b) {
      const int64_t stride = b == 0 ? kStages[s].stride : 1;
      if (config->bottleneck) {
        blocks.push_back(bottleneck(channels, kStages[s].planes, stride));
        channels = kStages[s].planes * kExpansion;
      } else {
        blocks.push_back(basic_block(channels, kStages[s].planes, stride));
        channels = kStages[s].planes;
      }
    }
    layers.push_back(named("layer" + std::to_string(s + 1), stack(std::move(blocks))));
  }
  layers.push_back(named("avgpool", adaptive_avg_pool(1, 1)));
  layers.push_back(named("flatten", flatten()));
  layers.push_back(named("fc", linear(classes)));
  return stack(std::move(layers));
}

}  // namespace batchscope::models
