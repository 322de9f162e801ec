#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "models/network.h"

// Gradients accumulated over micro-batches, and how far they are from the undivided batch's: the
// whole-model side of micro-batching (its timed steps are Workload::set_micro_batches').
namespace batchscope {

// Dropout off for as long as it lives: dropout modules and attention go to eval mode, and the dropout
// between recurrent layers (an option of the layer, not a module) is set to 0.
class DropoutOff {
 public:
  // Switches dropout off in `module` until destroyed.
  explicit DropoutOff(torch::nn::Module& module);
  ~DropoutOff();
  DropoutOff(const DropoutOff&) = delete;
  DropoutOff& operator=(const DropoutOff&) = delete;

 private:
  // LSTMOptions or GRUOptions of `layer`: what their forward reads the dropout from.
  template <typename Options>
  void silence(const std::shared_ptr<torch::nn::Module>& layer, Options& options) {
    const double dropout = options.dropout();
    options.dropout(0.0);
    restores_.push_back([layer, &options, dropout] { options.dropout(dropout); });
  }

  std::vector<std::shared_ptr<torch::nn::Module>> switched_;
  std::vector<std::function<void()>> restores_;
};

// Sets every parameter's gradient to none.
void clear_gradients(torch::nn::Module& module);

// The gradients of inputs.size(0) = B samples run as micro-batches b1 + ... + bk = B, in fp32 and with no
// optimizer step (the timed steps are the Workload's): gradients to none, then per slice forward, the
// model's mean loss × b_i/B and backward (gradients accumulate). Returns the summed loss, detached.
torch::Tensor accumulated_step(models::Network& network, const torch::Tensor& inputs,
                               const torch::Tensor& targets, const std::vector<int64_t>& split);

// Every parameter's gradient after one accumulated step (no optimizer step), zeros where none; the
// gradients are left as none.
std::vector<torch::Tensor> gradients_of(models::Network& network, const torch::Tensor& inputs,
                                        const torch::Tensor& targets, const std::vector<int64_t>& split);
// ||a - b|| / ||b|| over all tensors together (||a - b|| where b is all zeros).
double relative_l2(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b);

bool has_batch_norm(torch::nn::Module& module);
// ||g_split - g_whole|| / ||g_whole|| over all parameters' gradients, without an optimizer step, the
// network in its current mode but dropout off (dropout modules, attention dropout and the dropout
// between recurrent layers), so only batch statistics can make a difference. Parameters' gradients are
// left as none.
double gradient_relative_difference(models::Network& network, const torch::Tensor& inputs,
                                    const torch::Tensor& targets, const std::vector<int64_t>& split);

}  // namespace batchscope
