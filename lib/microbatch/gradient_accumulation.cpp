#include "lib/microbatch/gradient_accumulation.h"

#include <cmath>
#include <functional>
#include <memory>

namespace batchscope {

std::vector<torch::Tensor> gradients_of(models::Network& network, const torch::Tensor& inputs,
                                        const torch::Tensor& targets, const std::vector<int64_t>& split) {
  accumulated_step(network, inputs, targets, split);
  std::vector<torch::Tensor> grads;
  for (auto& p : network.parameters()) {
    grads.push_back(p.grad().defined() ? p.grad().detach().clone() : torch::zeros_like(p));
  }
  clear_gradients(network);
  return grads;
}

double relative_l2(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i].to(torch::kDouble) - b[i].to(torch::kDouble)).pow(2).sum().item<double>();
    norm += b[i].to(torch::kDouble).pow(2).sum().item<double>();
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

DropoutOff::DropoutOff(torch::nn::Module& module) {
  for (const auto& m : module.modules(/*include_self=*/false)) {
    if ((std::dynamic_pointer_cast<torch::nn::DropoutImpl>(m) ||
         std::dynamic_pointer_cast<torch::nn::Dropout2dImpl>(m) ||
         std::dynamic_pointer_cast<torch::nn::MultiheadAttentionImpl>(m)) &&
        m->is_training()) {
      m->eval();
      switched_.push_back(m);
    }
    // A recurrent layer's dropout between its layers is an option, not a module; the layer stays in
    // training mode, which cuDNN needs for its backward.
    if (auto lstm = std::dynamic_pointer_cast<torch::nn::LSTMImpl>(m)) silence(m, lstm->options);
    if (auto gru = std::dynamic_pointer_cast<torch::nn::GRUImpl>(m)) silence(m, gru->options);
  }
}

DropoutOff::~DropoutOff() {
  for (auto& m : switched_) m->train();
  for (auto& restore : restores_) restore();
}

void clear_gradients(torch::nn::Module& module) {
  for (auto& p : module.parameters()) p.mutable_grad().reset();
}

torch::Tensor accumulated_step(models::Network& network, const torch::Tensor& inputs,
                               const torch::Tensor& targets, const std::vector<int64_t>& split) {
  const int64_t batch = inputs.size(0);
  int64_t total = 0;
  for (int64_t s : split) {
    TORCH_CHECK(s > 0, "a micro-batch holds at least one sample");
    total += s;
  }
  TORCH_CHECK(total == batch, "the micro-batches add up to ", total, ", not the batch of ", batch);
  clear_gradients(network);
  torch::Tensor summed = torch::zeros({}, inputs.options().dtype(torch::kFloat));
  int64_t start = 0;
  for (int64_t s : split) {
    const double weight = static_cast<double>(s) / static_cast<double>(batch);
    const torch::Tensor loss =
        network.loss(network.forward(inputs.narrow(0, start, s)), targets.narrow(0, start, s)) * weight;
    loss.backward();
    summed += loss.detach();
    start += s;
  }
  return summed;
}

bool has_batch_norm(torch::nn::Module& module) {
  for (const auto& m : module.modules()) {
    if (std::dynamic_pointer_cast<torch::nn::BatchNorm1dImpl>(m) ||
        std::dynamic_pointer_cast<torch::nn::BatchNorm2dImpl>(m) ||
        std::dynamic_pointer_cast<torch::nn::BatchNorm3dImpl>(m))
      return true;
  }
  return false;
}

double gradient_relative_difference(models::Network& network, const torch::Tensor& inputs,
                                    const torch::Tensor& targets, const std::vector<int64_t>& split) {
  DropoutOff dropout_off(network);
  const auto whole = gradients_of(network, inputs, targets, {inputs.size(0)});
  const auto parts = gradients_of(network, inputs, targets, split);
  return relative_l2(parts, whole);
}

}  // namespace batchscope
