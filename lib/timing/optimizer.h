#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "lib/config/config.h"

namespace batchscope {

// The optimizer an experiment names, over the given parameters: sgd, sgd with momentum, adam or adamw;
// stepped in multi-tensor operations (foreach) where the experiment says so, or by default on a GPU.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& o,
                                                        const std::vector<torch::Tensor>& parameters);

}  // namespace batchscope
