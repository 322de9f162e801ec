#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/records/jsonl.h"

namespace batchscope {

// The device's dense matrix-product rate: the peak that a step's achieved TFLOP/s is read against.
// C = A·B with n×n matrices (2n³ FLOPs), each product timed on its own (CUDA events on a GPU) into a
// result made before the timed loop.
//   fp32: IEEE fp32 (TF32 refused for the measurement, then restored)
//   tf32: fp32 tensors with TF32 allowed in cuBLAS (CUDA only)
//   bf16, fp16: tensors of that type (fp16: CUDA only)
inline const std::vector<std::string> kPeakPrecisions = {"fp32", "tf32", "bf16", "fp16"};

struct PeakOptions {
  int64_t size = 0;  // n
  int warmup = 5;
  int steps = 20;
};

// The size a device gets unless told: large enough to keep a GPU's tensor cores busy (8192), and a
// product of a second or less on a CPU (2048).
int64_t default_peak_size(const torch::Device& device);
// The precisions measured unless told: all four on a GPU, fp32 on a CPU (bf16 there is often emulated).
std::vector<std::string> default_peak_precisions(const torch::Device& device);

struct PeakRate {
  std::string precision;
  int64_t size = 0;
  // Why it was not measured on this device (tf32 on a CPU, an operation LibTorch lacks); empty if it was.
  std::string skipped;
  std::vector<double> times_ms;
  double flops = 0;  // of one product
  double median_ms = 0;
  double median_tflops = 0, low_tflops = 0, high_tflops = 0;  // median, and from the p90 and p10 times
  std::string timer;
};

// One precision's rate on a device. Throws std::invalid_argument for an unknown precision or a size
// below 1; an operation LibTorch lacks for the type on this device is returned as skipped.
PeakRate measure_peak_rate(const torch::Device& device, const std::string& precision,
                           const PeakOptions& options);

Json to_json(const PeakRate& rate);

}  // namespace batchscope
