#pragma once

#include <cstdint>
#include <string>

namespace batchscope::models {

// A convolution or linear layer as the GEMMs it runs, per sample: what its FLOPs and its tiles follow
// from. The zoo's come from its layer tables; a TorchScript file's from its operators on one sample.
struct GemmLayer {
  std::string name;        // its module name, as the profiler's scopes carry it ("features.0")
  bool first = false;      // the model's first such layer: training computes no input gradient for it
  int64_t rows = 0;        // output rows per sample: output pixels for a convolution, 1 for a linear layer
  int64_t input_rows = 0;  // input pixels per sample (the data gradient's rows)
  int64_t n = 0;           // output channels or features, per group
  int64_t k = 0;           // input channels (per group) x kernel area, or input features
  int64_t in = 0;          // input channels or features, per group
  int64_t kernel_area = 1;
  int64_t groups = 1;

  // One sample's forward GEMM FLOPs (a multiply-add counted as 2), bias left out: also its data gradient's.
  double gemm_flops() const {
    return 2.0 * static_cast<double>(groups) * static_cast<double>(rows) * static_cast<double>(n) *
           static_cast<double>(k);
  }
};

}  // namespace batchscope::models
