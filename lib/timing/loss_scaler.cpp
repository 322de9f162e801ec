#include "lib/timing/loss_scaler.h"

#include <torch/version.h>

#include <cmath>
#include <map>

namespace batchscope {
namespace {

// LibTorch has the fused operations on the CPU from 2.3 on; 2.4 is the first this project checks.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
constexpr bool kFusedOnCpu = true;
#else
constexpr bool kFusedOnCpu = false;
#endif

}  // namespace

LossScaler::LossScaler(const torch::Device& device, Options options)
    : options_(options), fused_(device.is_cuda() || kFusedOnCpu) {
  TORCH_CHECK(options.init_scale > 0 && options.growth_factor > 1 && options.backoff_factor > 0 &&
                  options.backoff_factor < 1 && options.growth_interval > 0,
              "loss scaler options out of range");
  const auto on_device = torch::TensorOptions().device(device);
  scale_ = torch::full({}, options.init_scale, on_device.dtype(torch::kFloat32));
  growth_tracker_ = torch::zeros({}, on_device.dtype(torch::kInt32));
  found_inf_ = torch::zeros({}, on_device.dtype(torch::kFloat32));
}

torch::Tensor LossScaler::scale(const torch::Tensor& loss) const {
  return loss * scale_.to(loss.scalar_type());
}

bool LossScaler::step(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> gradients;
  for (const torch::Tensor& p : parameters) {
    if (p.grad().defined()) gradients.push_back(p.grad());
  }
  unscale_and_check(gradients);
  // The host must know whether to step: GradScaler.step reads found_inf the same way.
  const bool found_inf = found_inf_.item<float>() != 0.0f;
  if (found_inf) {
    ++skipped_;
  } else {
    optimizer.step();
  }
  update(found_inf);
  return !found_inf;
}

void LossScaler::unscale_and_check(const std::vector<torch::Tensor>& gradients) {
  torch::NoGradGuard no_grad;
  found_inf_.zero_();
  // In double, then float, as GradScaler computes it, so that 1/scale is exact for powers of two.
  const torch::Tensor inv_scale = scale_.to(torch::kFloat64).reciprocal().to(torch::kFloat32);
  if (fused_) {
    // The fused operation takes tensors of one dtype at a time.
    std::map<torch::ScalarType, std::vector<torch::Tensor>> by_dtype;
    for (const torch::Tensor& g : gradients) by_dtype[g.scalar_type()].push_back(g);
    for (auto& [dtype, group] : by_dtype) {
      (void)dtype;
      at::_amp_foreach_non_finite_check_and_unscale_(group, found_inf_, inv_scale);
    }
    return;
  }
  for (const torch::Tensor& g : gradients) {
    found_inf_.logical_or_(torch::isfinite(g).logical_not().any());
    g.mul_(inv_scale.to(g.scalar_type()));
  }
}

void LossScaler::update(bool found_inf) {
  torch::NoGradGuard no_grad;
  if (fused_) {
    at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor,
                           options_.backoff_factor, options_.growth_interval);
    return;
  }
  // The same rule as the fused operation, with found_inf already on the host.
  if (found_inf) {
    scale_.mul_(options_.backoff_factor);
    growth_tracker_.zero_();
  } else if (growth_tracker_.item<int32_t>() + 1 == options_.growth_interval) {
    // A scale that would overflow float stays as it is.
    const float grown = static_cast<float>(scale_.item<double>() * options_.growth_factor);
    if (std::isfinite(grown)) scale_.fill_(grown);
    growth_tracker_.zero_();
  } else {
    growth_tracker_.add_(1);
  }
}

double LossScaler::current_scale() const { return scale_.item<double>(); }

LossScaler::State LossScaler::save() const { return {scale_.clone(), growth_tracker_.clone()}; }

void LossScaler::restore(const State& state) {
  torch::NoGradGuard no_grad;
  scale_.copy_(state.scale);
  growth_tracker_.copy_(state.growth_tracker);
}

}  // namespace batchscope
