#include "models/portable_dropout.h"

#include <utility>

namespace batchscope::models {

torch::Tensor PortableDropoutImpl::forward(torch::Tensor input) {
  if (!host_generator_) return torch::nn::DropoutImpl::forward(std::move(input));
  const double p = options.p();
  if (!is_training() || p == 0) return input;
  const double keep = 1 - p;
  // Scaled on the host in fp32, so that every device multiplies by the same numbers.
  torch::Tensor mask = torch::empty(input.sizes(), torch::TensorOptions().dtype(torch::kFloat));
  if (keep == 0) {
    mask.zero_();
  } else {
    mask.bernoulli_(keep, *host_generator_).div_(keep);
  }
  mask = mask.to(input.device(), input.scalar_type());
  return options.inplace() ? input.mul_(mask) : input * mask;
}

void PortableDropoutImpl::draw_masks_from(std::optional<at::Generator> host_generator) {
  TORCH_CHECK(!host_generator || host_generator->device().is_cpu(),
              "dropout's host generator must be a CPU one");
  host_generator_ = std::move(host_generator);
}

HostMasks draw_dropout_masks_on_host(torch::nn::Module& model, const at::Generator& host_generator) {
  namespace nn = torch::nn;
  HostMasks result;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    const std::shared_ptr<nn::Module>& m = item.value();
    if (auto portable = std::dynamic_pointer_cast<PortableDropoutImpl>(m)) {
      portable->draw_masks_from(host_generator);
      ++result.switched;
      continue;
    }
    bool random = false;
    if (auto d = std::dynamic_pointer_cast<nn::DropoutImpl>(m)) random = d->options.p() > 0;
    if (auto d = std::dynamic_pointer_cast<nn::Dropout2dImpl>(m)) random = d->options.p() > 0;
    if (auto d = std::dynamic_pointer_cast<nn::Dropout3dImpl>(m)) random = d->options.p() > 0;
    if (auto a = std::dynamic_pointer_cast<nn::MultiheadAttentionImpl>(m)) random = a->options.dropout() > 0;
    if (auto r = std::dynamic_pointer_cast<nn::LSTMImpl>(m)) random = r->options.dropout() > 0;
    if (auto r = std::dynamic_pointer_cast<nn::GRUImpl>(m)) random = r->options.dropout() > 0;
    if (auto r = std::dynamic_pointer_cast<nn::RNNImpl>(m)) random = r->options.dropout() > 0;
    if (random) result.unswitched.push_back(item.key());
  }
  return result;
}

}  // namespace batchscope::models
