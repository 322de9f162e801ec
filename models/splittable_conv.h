#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace batchscope::models {

// A Conv2d that can run its mini-batch as micro-batches (µ-cuDNN's idea): the input is split along the
// batch dimension into slices of the given sizes, each slice is convolved on its own, and the outputs
// are joined. Autograd then runs the backward pass slice by slice too, and sums the weight gradients.
// Parameters, their names and the undivided behaviour are those of Conv2d.
class SplittableConv2dImpl : public torch::nn::Conv2dImpl {
 public:
  using torch::nn::Conv2dImpl::Conv2dImpl;

  torch::Tensor forward(const torch::Tensor& input);

  // Sizes that add up to the batch the layer will see; empty runs it undivided.
  void set_micro_batches(std::vector<int64_t> sizes);
  const std::vector<int64_t>& micro_batches() const { return micro_batches_; }

  // While recording, each forward keeps its input's shape (one sample's, without the batch) and type
  // (under autocast, the lower precision of the layer before), so that a planner can time the layer
  // alone at other batch sizes on inputs like those it sees in a step.
  void record_input_shape(bool on) { recording_ = on; }
  const std::vector<int64_t>& input_shape() const { return input_shape_; }
  torch::ScalarType input_dtype() const { return input_dtype_; }

 private:
  std::vector<int64_t> micro_batches_;
  bool recording_ = false;
  std::vector<int64_t> input_shape_;
  torch::ScalarType input_dtype_ = torch::kFloat;
};
TORCH_MODULE(SplittableConv2d);

using NamedConvolution = std::pair<std::string, std::shared_ptr<SplittableConv2dImpl>>;

// Every convolution of a model of the zoo with its parameter-path name (features.0, layer1.0.conv1),
// in the order they were registered, which is the order the forward pass runs them.
std::vector<NamedConvolution> convolutions(torch::nn::Module& model);

}  // namespace batchscope::models
