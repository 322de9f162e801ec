#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "lib/config/config.h"

namespace batchscope {

// Dynamic loss scaling, as fp16 training steps run it in PyTorch (torch.amp.GradScaler, with its
// defaults unless the experiment gives others): the loss is multiplied by the scale before backward; the
// gradients are divided by it and checked for inf/NaN; the optimizer's step is skipped where one is found,
// and the scale shrinks by the backoff factor; after growth_interval clean steps it grows by the growth
// factor. Reading whether a step overflowed waits for the device, once a step, as GradScaler.step does:
// that wait is part of what an fp16 step costs.
//
// On a GPU the unscale-and-check and the update are LibTorch's fused operations, the kernels PyTorch
// runs; where a LibTorch lacks them for the device (LibTorch 1.x on the CPU) the same arithmetic is
// composed of ordinary operations.
class LossScaler {
 public:
  using Options = LossScalerSettings;
  explicit LossScaler(const torch::Device& device, Options options);
  explicit LossScaler(const torch::Device& device) : LossScaler(device, Options{}) {}

  // The loss times the scale, to call backward() on.
  torch::Tensor scale(const torch::Tensor& loss) const;
  // Unscales the gradients of `parameters`, runs the optimizer's step unless one of them is not finite,
  // then updates the scale. Returns whether the optimizer stepped.
  bool step(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& parameters);

  // The current scale (waits for the device).
  double current_scale() const;
  // Steps whose optimizer step was skipped since the scaler was made.
  int64_t skipped_steps() const { return skipped_; }

  // What a later step depends on: the scale and the count of clean steps since it last changed.
  struct State {
    torch::Tensor scale, growth_tracker;
  };
  State save() const;
  void restore(const State& state);

 private:
  void unscale_and_check(const std::vector<torch::Tensor>& gradients);
  void update(bool found_inf);

  Options options_;
  bool fused_;
  torch::Tensor scale_;           // float32, 0-dim, on the device (as GradScaler keeps them)
  torch::Tensor growth_tracker_;  // int32, 0-dim, on the device
  torch::Tensor found_inf_;       // float32, 0-dim: 1 where a gradient was not finite
  int64_t skipped_ = 0;
};

}  // namespace batchscope
