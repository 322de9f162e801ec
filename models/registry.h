#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/network.h"

namespace batchscope::models {

// The shape of one sample, without the batch dimension, e.g. {3, 224, 224}.
using SampleShape = std::vector<int64_t>;

struct ModelSpec {
  std::string name;
  std::string summary;
  SampleShape default_input;
  int64_t default_classes = 0;
  // Both throw std::invalid_argument with a sentence when the input shape or class count does not
  // suit the architecture (e.g. an image so small that a pooling stage would leave nothing).
  std::function<std::shared_ptr<Network>(const SampleShape& input, int64_t classes)> build;
  // Forward FLOPs for one sample (multiply and add counted as two), see models/flop_tally.h.
  std::function<double(const SampleShape& input, int64_t classes)> forward_flops;
};

const std::vector<ModelSpec>& all_models();
// nullptr when no model has that name.
const ModelSpec* find_model(const std::string& name);
// "vgg16, vgg19, ..." for messages.
std::string known_model_names();

int64_t count_parameters(const torch::nn::Module& module, bool trainable_only = true);

}  // namespace batchscope::models
