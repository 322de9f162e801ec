#pragma once

#include <ATen/core/Generator.h>
#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

namespace batchscope::models {

// The Dropout of the planned networks. By default it is Dropout: its masks come from the device's own
// generator. Given a generator on the host, it draws each mask there instead and copies it to the
// input's device, so that the same seed gives the same masks on every device (the CPU's and a GPU's
// generators use different algorithms). That costs a host draw and a copy per step, so only runs that
// compare devices ask for it.
class PortableDropoutImpl : public torch::nn::DropoutImpl {
 public:
  using torch::nn::DropoutImpl::DropoutImpl;

  torch::Tensor forward(torch::Tensor input);

  // A CPU generator to draw masks from; nullopt goes back to the device's own.
  void draw_masks_from(std::optional<at::Generator> host_generator);
  bool draws_on_host() const { return host_generator_.has_value(); }

 private:
  std::optional<at::Generator> host_generator_;
};
TORCH_MODULE(PortableDropout);

struct HostMasks {
  int switched = 0;  // PortableDropout layers now drawing from the host generator
  // Modules that draw random numbers in training which cannot be switched (other dropouts, attention,
  // a recurrent layer's dropout between its layers), by their path in the model.
  std::vector<std::string> unswitched;
};

// Points every PortableDropout of `model` at `host_generator` (one generator, so the masks follow the
// order the forward pass draws them in), and names what still draws on the device.
HostMasks draw_dropout_masks_on_host(torch::nn::Module& model, const at::Generator& host_generator);

}  // namespace batchscope::models
