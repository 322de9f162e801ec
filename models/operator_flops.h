#pragma once

#include <ATen/record_function.h>

#include <vector>

#include "models/gemm_layer.h"

namespace batchscope::models {

// The FLOPs of the operators that LibTorch runs while a FlopCount lives on this thread: convolutions
// (2 per multiply-add of each output, or each input where transposed; a scripted module reaches them
// through aten::conv2d, a traced one through aten::_convolution directly, and both through the latter),
// matrix products (mm, addmm, bmm, baddbmm, mv, addmv, dot) and attention (scaled_dot_product_attention:
// its two products, whichever kernel runs them; the operators inside it count nothing more).
// Element-wise operators, normalisation and pooling count nothing.
class FlopCount {
 public:
  FlopCount();
  ~FlopCount();
  FlopCount(const FlopCount&) = delete;
  FlopCount& operator=(const FlopCount&) = delete;

  double flops() const;

  // The convolutions and linear layers that ran, one per module that ran exactly one convolution (of 1,
  // 2 or 3 dimensions, not transposed) or matrix product of its own, in the order they first ran. A module
  // that ran more (an attention's, one called twice) or none is left out: it is no single GEMM. The first is
  // marked where it is the first product of the forward.
  std::vector<GemmLayer> layers() const;
  // The FLOPs of the data gradients a training step never computes: the GEMMs of the convolutions and
  // products whose input needs no gradient (the data itself, or what only the data made), as a forward
  // run with gradients on, as in training, shows them.
  double data_gradient_flops() const;

 private:
  at::CallbackHandle handle_;
};

}  // namespace batchscope::models
