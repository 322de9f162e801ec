#pragma once

#include <torch/torch.h>

namespace batchscope::models {

// Every model of the zoo: a module with a single-tensor forward, so the sweep can drive any of them.
class Network : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor input) = 0;
};

}  // namespace batchscope::models
