#include "lib/training/noise_scale.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "lib/common/words.h"
#include "lib/records/jsonl.h"
#include "lib/records/records.h"

namespace batchscope {

namespace {

// One batch's estimates of |G|² and tr(Σ), each unbiased (appendix A.1).
struct BatchEstimate {
  double gradient_sq;
  double trace;
};

BatchEstimate estimate(const GradientNorms& n, double small, double big) {
  return {(big * n.big_sq - small * n.small_sq) / (big - small),
          (n.small_sq - n.big_sq) / (1 / small - 1 / big)};
}

}  // namespace

NoiseScale noise_scale_of(const std::vector<GradientNorms>& norms, int64_t small, int64_t big) {
  TORCH_CHECK(small >= 1 && big > small, "noise_scale_of: needs 1 <= small < big");
  NoiseScale n;
  n.small_batch = small;
  n.big_batch = big;
  n.groups = static_cast<int64_t>(norms.size());
  if (norms.empty()) return n;
  std::vector<BatchEstimate> each;
  double gradient_sum = 0, trace_sum = 0;
  for (const GradientNorms& norm : norms) {
    each.push_back(estimate(norm, static_cast<double>(small), static_cast<double>(big)));
    gradient_sum += each.back().gradient_sq;
    trace_sum += each.back().trace;
  }
  const auto count = static_cast<double>(norms.size());
  n.gradient_sq = gradient_sum / count;
  n.trace = trace_sum / count;
  // A ratio of means, as the paper forms it (the ratio of each batch's estimates would be biased).
  if (!(n.gradient_sq > 0)) return n;
  n.b_simple = n.trace / n.gradient_sq;
  if (norms.size() < 2) return n;
  // The jackknife: the ratio with each batch left out in turn.
  std::vector<double> left_out;
  double left_out_mean = 0;
  for (const BatchEstimate& e : each) {
    const double rest = gradient_sum - e.gradient_sq;
    if (!(rest > 0)) return n;
    left_out.push_back((trace_sum - e.trace) / rest);
    left_out_mean += left_out.back() / count;
  }
  double spread = 0;
  for (const double ratio : left_out) spread += (ratio - left_out_mean) * (ratio - left_out_mean);
  n.b_simple_stderr = std::sqrt((count - 1) / count * spread);
  return n;
}

GradientNorms measure_gradient_norms(std::vector<torch::Tensor>& parameters, const BatchLoss& loss_of,
                                     const NextBatch& next, int64_t batches) {
  TORCH_CHECK(batches >= 2, "measure_gradient_norms: a group needs two batches or more");
  const auto reset = [&] {
    for (torch::Tensor& p : parameters) p.mutable_grad().reset();
  };
  // Summed on the device and read once, in float64: the two norms are close where the noise is small,
  // and |G|²'s estimate is their difference.
  torch::Tensor small_sq, big_sq;
  std::vector<torch::Tensor> sum(parameters.size());
  int64_t size = 0;
  for (int64_t j = 0; j < batches; ++j) {
    torch::Tensor inputs, targets;
    TORCH_CHECK(next(inputs, targets), "measure_gradient_norms: the batches ran out after ", j);
    TORCH_CHECK(j == 0 || inputs.size(0) == size, "measure_gradient_norms: batches of other sizes");
    size = inputs.size(0);
    reset();
    loss_of(inputs, targets).backward();
    for (std::size_t k = 0; k < parameters.size(); ++k) {
      const torch::Tensor& grad = parameters[k].grad();
      if (!grad.defined()) continue;  // a parameter this loss does not reach
      const torch::Tensor sq = grad.square().sum(torch::kDouble);
      small_sq = small_sq.defined() ? small_sq + sq : sq;
      // The gradient tensor is the parameter's no longer once reset: it can take the sum in place.
      sum[k] = sum[k].defined() ? sum[k].add_(grad) : grad.detach();
    }
  }
  reset();
  TORCH_CHECK(small_sq.defined(), "measure_gradient_norms: the loss reaches no parameter");
  const auto count = static_cast<double>(batches);
  for (const torch::Tensor& s : sum) {
    if (!s.defined()) continue;
    const torch::Tensor sq = s.square().sum(torch::kDouble);
    big_sq = big_sq.defined() ? big_sq + sq : sq;
  }
  return {small_sq.item<double>() / count, big_sq.item<double>() / (count * count)};
}

std::optional<CriticalBatch> fit_critical_batch(const std::vector<std::pair<int64_t, double>>& batch_steps) {
  if (batch_steps.size() < 3) return std::nullopt;
  // steps = S_min + (S_min B_crit) / B: a line in x = 1/B, each point weighed by 1/steps², so that each
  // batch size counts by its relative error (the small batches' thousands of steps would outweigh the
  // large ones' tens otherwise).
  double total = 0, mean_x = 0, mean_y = 0;
  for (const auto& [batch, steps] : batch_steps) {
    if (!(steps > 0)) return std::nullopt;
    const double w = 1 / (steps * steps);
    total += w;
    mean_x += w / static_cast<double>(batch);
    mean_y += w * steps;
  }
  mean_x /= total;
  mean_y /= total;
  double sxx = 0, sxy = 0;
  for (const auto& [batch, steps] : batch_steps) {
    const double w = 1 / (steps * steps), dx = 1.0 / static_cast<double>(batch) - mean_x;
    sxx += w * dx * dx;
    sxy += w * dx * (steps - mean_y);
  }
  if (!(sxx > 0)) return std::nullopt;
  const double slope = sxy / sxx, intercept = mean_y - slope * mean_x;
  if (!(intercept > 0) || !(slope > 0)) return std::nullopt;
  return CriticalBatch{intercept, slope / intercept, static_cast<int>(batch_steps.size())};
}

nlohmann::ordered_json to_json(const NoiseScale& n) {
  return {{"b_simple", optional_json(n.b_simple)},
          {"b_simple_stderr", optional_json(n.b_simple_stderr)},
          {"gradient_sq", n.gradient_sq},
          {"trace", n.trace},
          {"small_batch", n.small_batch},
          {"big_batch", n.big_batch},
          {"groups", n.groups},
          {"seconds", n.seconds}};
}

NoiseScale noise_scale_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw BadRecord("has a \"noise_scale\" that is not an object");
  const auto number = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_number() || !std::isfinite(j[key].get<double>()))
      throw BadRecord(std::string("has a \"noise_scale\" without a number \"") + key + "\"");
    return j[key].get<double>();
  };
  const auto optional = [&](const char* key) -> std::optional<double> {
    if (j.contains(key) && j[key].is_null()) return std::nullopt;
    return number(key);
  };
  const auto whole = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 1)
      throw BadRecord(std::string("has a \"noise_scale\" without a positive whole \"") + key + "\"");
    return j[key].get<int64_t>();
  };
  NoiseScale n;
  n.b_simple = optional("b_simple");
  n.b_simple_stderr = optional("b_simple_stderr");
  n.gradient_sq = number("gradient_sq");
  n.trace = number("trace");
  n.small_batch = whole("small_batch");
  n.big_batch = whole("big_batch");
  n.groups = whole("groups");
  n.seconds = number("seconds");
  if (n.big_batch <= n.small_batch)
    throw BadRecord("has a \"noise_scale\" whose big_batch is not above small_batch");
  return n;
}

nlohmann::ordered_json noise_scale_options_json(const NoiseScaleOptions& o, int64_t batch_size) {
  const int64_t small = o.small_batch(batch_size);
  return {{"groups", o.groups},
          {"group", o.group},
          {"small_batch", small},
          {"big_batch", small * o.group},
          {"estimator", "McCandlish et al. 2018, appendix A.1: B_simple = tr(Sigma) / |G|^2"},
          {"data", "batches of the training split of their own, drawn from seed and epoch, after the epoch"}};
}

std::string noise_scale_text(const NoiseScale& n) {
  if (!n.b_simple) return "B_noise unresolved";
  std::string text = "B_noise " + samples_text(*n.b_simple);
  if (n.b_simple_stderr) text += " (se " + samples_text(*n.b_simple_stderr) + ")";
  return text;
}

}  // namespace batchscope
