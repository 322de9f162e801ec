#include "lib/timing/optimizer.h"

#include "lib/timing/foreach_optimizer.h"

namespace batchscope {
namespace {

template <typename Loop, typename Foreach, typename Options>
std::unique_ptr<torch::optim::Optimizer> either(bool foreach, const std::vector<torch::Tensor>& parameters,
                                                const Options& options) {
  if (foreach) return std::make_unique<Foreach>(parameters, options);
  return std::make_unique<Loop>(parameters, options);
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& o,
                                                        const std::vector<torch::Tensor>& parameters) {
  const bool foreach = o.foreach.value_or(!parameters.empty() && parameters.front().is_cuda());
  switch (o.kind) {
    case OptimizerKind::SGD:
      return either<torch::optim::SGD, ForeachSGD>(
          foreach, parameters, torch::optim::SGDOptions(o.lr).weight_decay(o.weight_decay));
    case OptimizerKind::Momentum:
      return either<torch::optim::SGD, ForeachSGD>(
          foreach, parameters,
          torch::optim::SGDOptions(o.lr).momentum(o.momentum).weight_decay(o.weight_decay));
    case OptimizerKind::Adam:
      return either<torch::optim::Adam, ForeachAdam>(foreach, parameters,
                                                     torch::optim::AdamOptions(o.lr)
                                                         .betas(std::make_tuple(o.beta1, o.beta2))
                                                         .eps(o.eps)
                                                         .weight_decay(o.weight_decay));
    case OptimizerKind::AdamW:
      return either<torch::optim::AdamW, ForeachAdamW>(foreach, parameters,
                                                       torch::optim::AdamWOptions(o.lr)
                                                           .betas(std::make_tuple(o.beta1, o.beta2))
                                                           .eps(o.eps)
                                                           .weight_decay(o.weight_decay));
  }
  TORCH_CHECK(false, "unknown optimizer kind");
}

}  // namespace batchscope
