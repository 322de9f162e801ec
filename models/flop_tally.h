#pragma once

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

namespace batchscope::models {

// "3x224x224", for messages.
std::string shape_text(const std::vector<int64_t>& shape);

// Forward FLOPs of one sample, counted layer by layer while the activation shape is carried along.
//
// Conventions: a multiply-add counts as 2 FLOPs.
//   conv       2 * Cin/groups * kh * kw per output element, +1 per output element with a bias
//   linear     2 * in * out, +out with a bias
//   batch norm 2 per element: the scale and shift it folds into at inference (training also computes
//              batch statistics, which are not counted)
//   ReLU/ReLU6 1 per element
//   max pool   k*k - 1 comparisons per output element
//   avg pool   1 add per input element + 1 division per output element
//   residual   1 add per element
//   dropout    0: it is the identity at inference, and its training mask is bookkeeping, not model work
//   flatten    0
//
// A layer that would leave a spatial dimension of zero or less throws std::invalid_argument, so walking
// a model's layers also checks that an input is large enough for it.
class FlopTally {
 public:
  // One sample's shape without the batch: {channels, height, width} or {features}.
  explicit FlopTally(std::vector<int64_t> sample_shape);

  void conv2d(int64_t out_channels, int64_t kernel, int64_t stride = 1, int64_t padding = 0,
              int64_t groups = 1, bool bias = true);
  void batchnorm();
  void relu();
  void maxpool(int64_t kernel, int64_t stride, int64_t padding = 0);
  void adaptive_avgpool(int64_t out_height, int64_t out_width);
  void linear(int64_t out_features, bool bias = true);
  // An element-wise residual add onto the current activation.
  void add();
  void dropout();
  void flatten();

  // Adds the FLOPs of a parallel branch, e.g. a projection shortcut tallied from the block's input.
  void absorb(const FlopTally& branch);

  const std::vector<int64_t>& shape() const { return shape_; }
  // The fewest values per channel that a batch norm layer sees in one sample (height x width), or
  // INT64_MAX where there is none: at 1, training needs a batch of 2 or more.
  int64_t smallest_norm_plane() const { return smallest_norm_plane_; }
  int64_t elements() const;
  int64_t total() const { return total_; }

 private:
  // Output side of a sliding window; throws when the window no longer fits.
  int64_t window_output(int64_t side, int64_t kernel, int64_t stride, int64_t padding,
                        const char* layer) const;
  void require_image(const char* layer) const;

  std::vector<int64_t> shape_;
  int64_t total_ = 0;
  int64_t smallest_norm_plane_ = INT64_MAX;
};

}  // namespace batchscope::models
