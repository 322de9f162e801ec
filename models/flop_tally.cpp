#include "models/flop_tally.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace batchscope::models {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) text += (i == 0 ? "" : "x") + std::to_string(shape[i]);
  return text;
}

FlopTally::FlopTally(std::vector<int64_t> sample_shape) : shape_(std::move(sample_shape)) {
  TORCH_CHECK(!shape_.empty(), "a sample shape needs at least one dimension");
  for (int64_t side : shape_) {
    if (side < 1) {
      throw std::invalid_argument("every dimension of a sample must be at least 1, got " +
                                  shape_text(shape_));
    }
  }
}

int64_t FlopTally::elements() const {
  return std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
}

void FlopTally::require_image(const char* layer) const {
  TORCH_CHECK(shape_.size() == 3, "a ", layer, " needs a {channels, height, width} activation, got ",
              shape_text(shape_));
}

int64_t FlopTally::window_output(int64_t side, int64_t kernel, int64_t stride, int64_t padding,
                                 const char* layer) const {
  TORCH_CHECK(kernel >= 1 && stride >= 1 && padding >= 0, "bad ", layer, " geometry");
  const int64_t span = side + 2 * padding - kernel;
  if (span < 0) {
    throw std::invalid_argument("a " + std::to_string(kernel) + "x" + std::to_string(kernel) + " " + layer +
                                " with padding " + std::to_string(padding) +
                                " needs a larger activation than " + shape_text(shape_));
  }
  return span / stride + 1;
}

void FlopTally::conv2d(int64_t out_channels, int64_t kernel, int64_t stride, int64_t padding, int64_t groups,
                       bool bias) {
  require_image("convolution");
  const int64_t in_channels = shape_[0];
  TORCH_CHECK(groups >= 1 && in_channels % groups == 0 && out_channels % groups == 0, "a convolution of ",
              in_channels, " to ", out_channels, " channels cannot have ", groups, " groups");
  const int64_t height = window_output(shape_[1], kernel, stride, padding, "convolution");
  const int64_t width = window_output(shape_[2], kernel, stride, padding, "convolution");
  shape_ = {out_channels, height, width};
  total_ += elements() * (2 * (in_channels / groups) * kernel * kernel + (bias ? 1 : 0));
}

void FlopTally::batchnorm() {
  require_image("batch norm");
  total_ += 2 * elements();
  smallest_norm_plane_ = std::min(smallest_norm_plane_, shape_[1] * shape_[2]);
}

void FlopTally::relu() { total_ += elements(); }

void FlopTally::maxpool(int64_t kernel, int64_t stride, int64_t padding) {
  require_image("max-pool");
  const int64_t height = window_output(shape_[1], kernel, stride, padding, "max-pool");
  const int64_t width = window_output(shape_[2], kernel, stride, padding, "max-pool");
  shape_ = {shape_[0], height, width};
  total_ += elements() * (kernel * kernel - 1);
}

void FlopTally::adaptive_avgpool(int64_t out_height, int64_t out_width) {
  require_image("adaptive average pool");
  TORCH_CHECK(out_height >= 1 && out_width >= 1, "an adaptive pool needs a positive output size");
  const int64_t inputs = elements();
  shape_ = {shape_[0], out_height, out_width};
  total_ += inputs + elements();
}

void FlopTally::linear(int64_t out_features, bool bias) {
  TORCH_CHECK(shape_.size() == 1, "a linear layer needs a flat activation, got ", shape_text(shape_));
  const int64_t in_features = shape_[0];
  shape_ = {out_features};
  total_ += 2 * in_features * out_features + (bias ? out_features : 0);
}

void FlopTally::add() { total_ += elements(); }

void FlopTally::dropout() {}

void FlopTally::flatten() { shape_ = {elements()}; }

void FlopTally::absorb(const FlopTally& branch) {
  total_ += branch.total_;
  smallest_norm_plane_ = std::min(smallest_norm_plane_, branch.smallest_norm_plane_);
}

}  // namespace batchscope::models
