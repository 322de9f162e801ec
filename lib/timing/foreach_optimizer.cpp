#include "lib/timing/foreach_optimizer.h"

#include <cmath>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>

namespace batchscope {
namespace {

// The key LibTorch's optimizers file a parameter's state under: the address of its TensorImpl, as text
// in LibTorch 1.x and as the pointer itself in 2.x.
template <typename StateMap>
typename StateMap::key_type state_key(const StateMap&, const torch::Tensor& p) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << p.unsafeGetTensorImpl();
    return text.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

// The parameters of a group that have gradients, with the gradients.
struct Stepped {
  std::vector<torch::Tensor> params, grads;
};

Stepped with_gradients(const torch::optim::OptimizerParamGroup& group) {
  Stepped s;
  for (const torch::Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    s.params.push_back(p);
    s.grads.push_back(p.grad());
  }
  return s;
}

torch::Tensor run_closure(const torch::optim::Optimizer::LossClosure& closure) {
  if (!closure) return {};
  torch::AutoGradMode grad_on(true);
  return closure();
}

// Adam's update of a group's parameters in multi-tensor operations, in the order of LibTorch's loop.
// Decoupled (AdamW): the weights shrink by lr × weight_decay before the update, and the gradient is
// left as it is; otherwise (Adam) the decay is added to the gradient.
template <typename Options, typename ParamState, typename StateMap>
void adam_step(std::vector<torch::optim::OptimizerParamGroup>& groups, StateMap& states, bool decoupled) {
  for (auto& group : groups) {
    const auto& o = static_cast<const Options&>(group.options());
    TORCH_CHECK(!o.amsgrad(), "the multi-tensor Adam steps without amsgrad only");
    Stepped s = with_gradients(group);
    if (s.params.empty()) continue;
    const double beta1 = std::get<0>(o.betas());
    const double beta2 = std::get<1>(o.betas());
    // Parameters are stepped together by their step count (the same for all, unless some had no
    // gradient at some step): bias corrections depend on it.
    struct SameStep {
      std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
    };
    std::map<int64_t, SameStep> by_step;
    for (std::size_t i = 0; i < s.params.size(); ++i) {
      const torch::Tensor& p = s.params[i];
      const auto key = state_key(states, p);
      if (states.find(key) == states.end()) {
        auto state = std::make_unique<ParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        states[key] = std::move(state);
      }
      auto& state = static_cast<ParamState&>(*states[key]);
      state.step(state.step() + 1);
      SameStep& same = by_step[state.step()];
      same.params.push_back(p);
      same.grads.push_back(s.grads[i]);
      same.exp_avgs.push_back(state.exp_avg());
      same.exp_avg_sqs.push_back(state.exp_avg_sq());
    }
    for (auto& [step, group_of_step] : by_step) {
      const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
      const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
      if (decoupled && o.weight_decay() != 0)
        at::_foreach_mul_(group_of_step.params, 1 - o.lr() * o.weight_decay());
      std::vector<torch::Tensor> grads =
          !decoupled && o.weight_decay() != 0
              ? at::_foreach_add(group_of_step.grads, group_of_step.params, o.weight_decay())
              : group_of_step.grads;
      std::vector<torch::Tensor>& m = group_of_step.exp_avgs;
      std::vector<torch::Tensor>& v = group_of_step.exp_avg_sqs;
      at::_foreach_mul_(m, beta1);
      at::_foreach_add_(m, grads, 1 - beta1);
      at::_foreach_mul_(v, beta2);
      at::_foreach_addcmul_(v, grads, grads, 1 - beta2);
      std::vector<torch::Tensor> denom = at::_foreach_sqrt(v);
      at::_foreach_div_(denom, std::sqrt(bias_correction2));
      at::_foreach_add_(denom, o.eps());
      at::_foreach_addcdiv_(group_of_step.params, m, denom, -o.lr() / bias_correction1);
    }
  }
}

}  // namespace

torch::Tensor ForeachSGD::step(LossClosure closure) {
  const torch::Tensor loss = run_closure(closure);
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
    Stepped s = with_gradients(group);
    if (s.params.empty()) continue;
    std::vector<torch::Tensor> d_p =
        o.weight_decay() != 0 ? at::_foreach_add(s.grads, s.params, o.weight_decay()) : s.grads;
    if (o.momentum() != 0) {
      // The first step's buffer is the update itself; later ones decay and take the update in.
      std::vector<torch::Tensor> buffers, kept, kept_d_p;
      for (std::size_t i = 0; i < s.params.size(); ++i) {
        const auto key = state_key(state_, s.params[i]);
        auto found = state_.find(key);
        if (found == state_.end()) {
          auto state = std::make_unique<torch::optim::SGDParamState>();
          state->momentum_buffer(torch::clone(d_p[i]).detach());
          buffers.push_back(state->momentum_buffer());
          state_[key] = std::move(state);
        } else {
          buffers.push_back(static_cast<torch::optim::SGDParamState&>(*found->second).momentum_buffer());
          kept.push_back(buffers.back());
          kept_d_p.push_back(d_p[i]);
        }
      }
      if (!kept.empty()) {
        at::_foreach_mul_(kept, o.momentum());
        at::_foreach_add_(kept, kept_d_p, 1 - o.dampening());
      }
      if (o.nesterov()) {
        d_p = at::_foreach_add(d_p, buffers, o.momentum());
      } else {
        d_p = buffers;
      }
    }
    at::_foreach_add_(s.params, d_p, -1 * o.lr());
  }
  return loss;
}

torch::Tensor ForeachAdam::step(LossClosure closure) {
  const torch::Tensor loss = run_closure(closure);
  torch::NoGradGuard no_grad;
  adam_step<torch::optim::AdamOptions, torch::optim::AdamParamState>(param_groups_, state_,
                                                                     /*decoupled=*/false);
  return loss;
}

torch::Tensor ForeachAdamW::step(LossClosure closure) {
  const torch::Tensor loss = run_closure(closure);
  torch::NoGradGuard no_grad;
  adam_step<torch::optim::AdamWOptions, torch::optim::AdamWParamState>(param_groups_, state_,
                                                                       /*decoupled=*/true);
  return loss;
}

}  // namespace batchscope
