#include <c10/util/Exception.h>

#include <cstdint>
#include <vector>

#include "models/zoo.h"

namespace batchscope::models {
namespace {

// Marks a 2x2 max-pool with stride 2; every other entry is a 3x3 convolution with that many outputs.
constexpr int64_t kPool = 0;

struct VggConfig {
  int depth;
  std::vector<int64_t> features;
};

const std::vector<VggConfig>& vgg_configs() {
  static const std::vector<VggConfig> configs = {
      {16,
       {64, 64, kPool, 128, 128, kPool, 256, 256, 256, kPool, 512, 512, 512, kPool, 512, 512, 512, kPool}},
      {19, {64,  64,  kPool, 128, 128,   kPool, 256, 256, 256, 256,  kPool,
            512, 512, 512,   512, kPool, 512,   512, 512, 512, kPool}},
  };
  return configs;
}

// The classifier sees a fixed 7x7 grid whatever the input size, so its weights never depend on it.
constexpr int64_t kVggPooledSide = 7;
constexpr int64_t kVggHidden = 4096;
constexpr double kVggDropout = 0.5;

}  // namespace

Layer vgg_plan(int depth, int64_t classes) {
  const VggConfig* config = nullptr;
  for (const VggConfig& candidate : vgg_configs()) {
    if (candidate.depth == depth) config = &candidate;
  }
  TORCH_CHECK(config != nullptr, "no VGG configuration of depth ", depth);

  std::vector<Layer> features;
  for (int64_t entry : config->features) {
    if (entry == kPool) {
      features.push_back(max_pool(2, 2));
    } else {
      features.push_back(conv(entry, 3, 1, 1));
      features.push_back(relu());
    }
  }
  return stack({
      named("features", stack(std::move(features))),
      named("avgpool", adaptive_avg_pool(kVggPooledSide, kVggPooledSide)),
      named("flatten", flatten()),
      named("classifier", stack({linear(kVggHidden), relu(), dropout(kVggDropout), linear(kVggHidden), relu(),
                                 dropout(kVggDropout), linear(classes)})),
  });
}

}  // namespace batchscope::models
