#pragma once

#include <torch/torch.h>

#include <vector>

namespace batchscope {

// LibTorch's SGD and Adam, stepped as PyTorch 2 steps them by default on a GPU (foreach=None): each
// update is one multi-tensor operation over every parameter (torch._foreach_*), a few kernels in all,
// where LibTorch's own step runs a loop of a few kernels per parameter. The arithmetic is the loop's,
// in the same order, and the state is the base class's (momentum buffers; Adam's step and moments),
// so saving and loading them, and checkpoints, are unchanged.
class ForeachSGD : public torch::optim::SGD {
 public:
  using torch::optim::SGD::SGD;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

// Without amsgrad, the only form this project builds.
class ForeachAdam : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

// Adam with the weight decay taken from the weights themselves before the update (decoupled), as
// LibTorch's and PyTorch's AdamW; without amsgrad.
class ForeachAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace batchscope
