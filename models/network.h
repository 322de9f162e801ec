#pragma once

#include <torch/torch.h>

namespace batchscope::models {

// Inputs and targets of one batch, as the model's forward and loss take them.
struct Batch {
  torch::Tensor inputs;
  torch::Tensor targets;
};

// Every model of the zoo: a module with a single-tensor forward and its own training loss, so the
// sweep can drive any of them (image classifiers, language models, speech recognisers) alike.
class Network : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor input) = 0;
  // The training loss of forward's output against a batch's targets. Image classifiers: cross-entropy
  // of [batch, classes] logits against [batch] class indices.
  virtual torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets) {
    return torch::nn::functional::cross_entropy(output, targets);
  }
};

}  // namespace batchscope::models
