#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace batchscope {

// The gradient noise scale of McCandlish et al. ("An Empirical Model of Large-Batch Training", 2018):
// B_simple = tr(Σ) / |G|², where G is the gradient of the loss over all the training data and Σ the
// covariance of one example's gradient. Below it a larger batch takes about proportionally fewer steps to
// an accuracy; above it, hardly fewer: steps ≈ S_min (1 + B_noise / B), so a batch size near B_noise is
// where more samples per step stop paying (the paper's critical batch size).
//
// It is measured as the paper's appendix A.1 does, from the squared norms of gradients at two batch sizes:
// the training batch size B (or another) is the small one, and `group` such batches together (their mean
// gradient) the big one, as the paper's data-parallel devices are:
//   |G_small|² = the batches' squared gradient norms, averaged,  |G_big|² = that of their mean;
// since E|G_B|² = |G|² + tr(Σ)/B, these give unbiased estimates of each:
//   |G|² ≈ (big |G_big|² - small |G_small|²) / (big - small),
//   tr(Σ) ≈ (|G_small|² - |G_big|²) / (1/small - 1/big),
// and B_simple is the ratio of their means over the measured groups. It resolves noise scales between
// about the small batch and the big one best: where B_noise is far above the big batch, |G|²'s estimate
// is lost in its noise.

// What `train --noise-scale` measures after each epoch.
struct NoiseScaleOptions {
  int64_t groups = 0;  // big batches measured after each epoch; 0: none
  int64_t group = 8;   // small batches in each big batch
  int64_t batch = 0;   // the small batch size; 0: the training batch size
  bool on() const { return groups > 0; }
  int64_t small_batch(int64_t training_batch) const { return batch > 0 ? batch : training_batch; }
};

// One big batch: the squared gradient norms at the two batch sizes.
struct GradientNorms {
  double small_sq = 0;  // the mean over its training batches of |G_small|²
  double big_sq = 0;    // |G_big|² of the whole group (its batches' mean gradient)
};

struct NoiseScale {
  int64_t small_batch = 0;
  int64_t big_batch = 0;
  int64_t groups = 0;      // the big batches measured
  double gradient_sq = 0;  // the estimate of |G|², averaged over the groups
  double trace = 0;        // the estimate of tr(Σ), averaged
  // trace / gradient_sq; none where the estimate of |G|² is not positive: the gradient is lost in its
  // noise at these batch sizes (late in training, or too few batches measured).
  std::optional<double> b_simple;
  // The jackknife's standard error of b_simple over the groups (each left out in turn); none with fewer
  // than two groups, or where a group left out leaves no positive |G|².
  std::optional<double> b_simple_stderr;
  double seconds = 0;  // what the measurement took, outside the epoch's time
};

// The estimates from measured groups of `big` examples, each of batches of `small` (small < big).
NoiseScale noise_scale_of(const std::vector<GradientNorms>& norms, int64_t small, int64_t big);

// The loss of a batch: the mean over its examples (as cross-entropy's default), its graph to the
// parameters kept for backward().
using BatchLoss = std::function<torch::Tensor(const torch::Tensor& inputs, const torch::Tensor& targets)>;

// Gives the next batch's inputs and targets, false where there is none.
using NextBatch = std::function<bool(torch::Tensor& inputs, torch::Tensor& targets)>;

// One group's squared norms: a backward pass over each of `batches` batches from next() (each of the same
// size), each one's gradient's squared norm summed over `parameters` in float64, and the squared norm of
// their mean. The parameters' gradients are left reset (undefined). Throws std::runtime_error where next()
// runs out or gives batches of other sizes.
GradientNorms measure_gradient_norms(std::vector<torch::Tensor>& parameters, const BatchLoss& loss_of,
                                     const NextBatch& next, int64_t batches);

// The paper's model of the steps an accuracy takes, S(B) = S_min (1 + B_crit / B), fitted by least squares
// to (batch size, steps) pairs (linear in 1/B, each weighed by its relative error): B_crit measured from
// training to an accuracy, which B_noise predicts. None with fewer than three batch sizes, or where the fit
// gives no positive S_min and B_crit.
struct CriticalBatch {
  double min_steps = 0;       // S_min: the steps of an infinitely large batch
  double critical_batch = 0;  // B_crit
  int points = 0;
};
std::optional<CriticalBatch> fit_critical_batch(const std::vector<std::pair<int64_t, double>>& batch_steps);

// The epoch record's "noise_scale", and back; from_json throws BadRecord naming what is wrong.
nlohmann::ordered_json to_json(const NoiseScale& n);
NoiseScale noise_scale_from_json(const nlohmann::json& j);
// The run record's "noise_scale": how it is measured.
nlohmann::ordered_json noise_scale_options_json(const NoiseScaleOptions& o, int64_t batch_size);
// "B_noise 312 ± 41" or "B_noise unresolved": for an epoch's row.
std::string noise_scale_text(const NoiseScale& n);

}  // namespace batchscope
