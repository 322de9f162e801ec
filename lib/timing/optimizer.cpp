#include "lib/timing/optimizer.h"

namespace batchscope {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& o,
                                                        const std::vector<torch::Tensor>& parameters) {
  switch (o.kind) {
    case OptimizerKind::SGD:
      return std::make_unique<torch::optim::SGD>(parameters,
                                                 torch::optim::SGDOptions(o.lr).weight_decay(o.weight_decay));
    case OptimizerKind::Momentum:
      return std::make_unique<torch::optim::SGD>(
          parameters, torch::optim::SGDOptions(o.lr).momentum(o.momentum).weight_decay(o.weight_decay));
    case OptimizerKind::Adam:
      return std::make_unique<torch::optim::Adam>(parameters, torch::optim::AdamOptions(o.lr)
                                                                  .betas(std::make_tuple(o.beta1, o.beta2))
                                                                  .eps(o.eps)
                                                                  .weight_decay(o.weight_decay));
  }
  TORCH_CHECK(false, "unknown optimizer kind");
}

}  // namespace batchscope
