#include "models/splittable_conv.h"

#include <numeric>

namespace batchscope::models {

torch::Tensor SplittableConv2dImpl::forward(const torch::Tensor& input) {
  if (recording_) {
    input_shape_.assign(input.sizes().begin() + 1, input.sizes().end());
    input_dtype_ = input.scalar_type();
  }
  if (micro_batches_.empty() || micro_batches_.size() == 1) return torch::nn::Conv2dImpl::forward(input);
  const int64_t total = std::accumulate(micro_batches_.begin(), micro_batches_.end(), int64_t{0});
  TORCH_CHECK(total == input.size(0), "the micro-batches of a convolution add up to ", total,
              " but its input has a batch of ", input.size(0));
  std::vector<torch::Tensor> outputs;
  outputs.reserve(micro_batches_.size());
  int64_t start = 0;
  for (int64_t size : micro_batches_) {
    outputs.push_back(torch::nn::Conv2dImpl::forward(input.narrow(0, start, size)));
    start += size;
  }
  return torch::cat(outputs, 0);
}

void SplittableConv2dImpl::set_micro_batches(std::vector<int64_t> sizes) {
  for (int64_t size : sizes) TORCH_CHECK(size > 0, "a micro-batch holds at least one sample");
  micro_batches_ = std::move(sizes);
}

std::vector<NamedConvolution> convolutions(torch::nn::Module& model) {
  std::vector<NamedConvolution> out;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    if (auto conv = std::dynamic_pointer_cast<SplittableConv2dImpl>(item.value()))
      out.emplace_back(item.key(), conv);
  }
  return out;
}

}  // namespace batchscope::models
