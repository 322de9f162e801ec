#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/records/jsonl.h"

namespace batchscope {

// The device's dense rates, the peaks that a step's achieved TFLOP/s is read against. Two operations:
//   matmul: C = A·B with n×n matrices (2n³ FLOPs), into a result made before the timed loop;
//   conv:   a 3×3 convolution, stride 1, padding 1, of an N×C×H×W input to C channels, no bias
//           (2·N·C·C·9·H·W FLOPs, a multiply-add counted as 2 as the models count theirs), forward alone
//           and forward with backward, in both memory layouts, with cuDNN's benchmark mode on a GPU
//           (the fastest algorithm it finds): the roof of a CNN's layers, which cuDNN may run by
//           algorithms (Winograd, FFT) that do fewer multiplications than the FLOPs counted, so that
//           their rate can pass the matrix product's.
// Each run is timed on its own (CUDA events on a GPU) after warm-up runs. Precisions:
//   fp32: IEEE fp32 (TF32 refused in cuBLAS and cuDNN for the measurement, then restored)
//   tf32: fp32 tensors with TF32 allowed in cuBLAS and cuDNN (CUDA only)
//   bf16, fp16: tensors of that type (fp16: CUDA only)
inline const std::vector<std::string> kPeakPrecisions = {"fp32", "tf32", "bf16", "fp16"};
// layers: each convolution and linear layer of a model alone (peak --model, lib/microbatch/layer_peak.h).
inline const std::vector<std::string> kPeakOperations = {"matmul", "conv", "layers"};
inline const std::vector<std::string> kConvMemoryFormats = {"contiguous", "channels_last"};
// infer: the forward pass alone; train: the forward pass and the backward's two convolutions (the
// input's gradient and the weights'), 3 times the forward's FLOPs, as a training step's are counted.
inline const std::vector<std::string> kConvPhases = {"train", "infer"};

struct ConvShape {
  int64_t batch = 0, channels = 0, height = 0, width = 0;
  std::array<int64_t, 4> sizes() const { return {batch, channels, height, width}; }
  // "64x256x56x56"
  std::string text() const;
  double flops() const;  // of one convolution
};

struct PeakOptions {
  int64_t size = 0;  // n of the matrix product
  ConvShape conv;    // the convolution's input
  int warmup = 5;
  int steps = 20;
};

// The sizes a device gets unless told: large enough to keep a GPU's tensor cores busy (8192; a VGG16
// layer of the third block at batch 64, 64x256x56x56), and a run of a second or less on a CPU (2048;
// 8x128x28x28).
int64_t default_peak_size(const torch::Device& device);
ConvShape default_conv_shape(const torch::Device& device);
// The precisions measured unless told: all four on a GPU, fp32 on a CPU (bf16 there is often emulated).
std::vector<std::string> default_peak_precisions(const torch::Device& device);

// A layer of a model timed alone (operation "layer", batchscope peak --model): which layer, in which pass.
struct LayerOfModel {
  std::string name;            // its module name, as the profiler's scopes carry it ("features.0")
  std::string kind;            // conv or linear
  std::string pass;            // forward or backward
  int64_t batch = 0;           // samples per run
  std::vector<int64_t> input;  // one sample's input to the layer, without the batch
};

struct PeakRate {
  std::string operation = "matmul";
  std::string precision;
  int64_t size = 0;              // matmul
  ConvShape conv;                // conv
  LayerOfModel layer;            // layer
  std::string memory_format;     // conv and layer: contiguous or channels_last
  std::string phase;             // conv and layer: train or infer
  bool cudnn_benchmark = false;  // conv and layer on a GPU
  // Why it was not measured on this device (tf32 on a CPU, an operation LibTorch lacks); empty if it was.
  std::string skipped;
  std::vector<double> times_ms;
  double flops = 0;  // of one run
  double median_ms = 0;
  double median_tflops = 0, low_tflops = 0, high_tflops = 0;  // median, and from the p90 and p10 times
  std::string timer;
  // A layer's runs once more under the profiler, timed as a profiled step times its layers
  // (profile_layer_runs): the kernels' time on a GPU, without the launches' gaps that the timer's span
  // holds; the operators' host time on a CPU, with the profiler's own cost as the step's has it. The
  // measure that analyze reads a step's layer against; empty where not profiled.
  std::vector<double> profiled_ms;
  std::string profiled_as;  // "kernels" or "operators"
  double profiled_median_ms = 0, profiled_tflops = 0;
  int64_t profiled_kernels = 0;  // on a GPU: the kernels each profiled run showed
  // On a GPU: the median run's time in kernels that convert tensors between NCHW and NHWC.
  std::optional<double> profiled_layout_ms;
  // Why the profiled runs were dropped (their kernels differed from run to run); empty where they were not.
  std::string profiled_dropped;
};

// One precision's matrix-product rate on a device. Throws std::invalid_argument for an unknown
// precision or a size below 1; an operation LibTorch lacks for the type on this device is returned as
// skipped.
PeakRate measure_peak_rate(const torch::Device& device, const std::string& precision,
                           const PeakOptions& options);

// One precision's convolution rate in one memory layout (contiguous or channels_last) and phase (train
// or infer), likewise.
PeakRate measure_conv_peak_rate(const torch::Device& device, const std::string& precision,
                                const std::string& memory_format, const std::string& phase,
                                const PeakOptions& options);

// The backward pass the training phase times: the gradients of a 3×3 convolution (stride 1, padding 1, no
// bias) with respect to its input and its weights, given the output's.
std::pair<torch::Tensor, torch::Tensor> conv3x3_gradients(const torch::Tensor& grad_output,
                                                          const torch::Tensor& input,
                                                          const torch::Tensor& weight);

Json to_json(const PeakRate& rate);

// The library's TF32 and cuDNN settings as a peak measurement needs them (TF32 in cuBLAS and cuDNN as
// asked, cuDNN's benchmark mode as asked, deterministic algorithms off), and as they were again after.
class PeakSettings {
 public:
  PeakSettings(bool tf32, bool cudnn_benchmark);
  ~PeakSettings();
  PeakSettings(const PeakSettings&) = delete;
  PeakSettings& operator=(const PeakSettings&) = delete;

 private:
  bool tf32_cublas_, tf32_cudnn_, benchmark_, deterministic_;
};

// Why a precision is not measured on this device (tf32 and fp16 off CUDA); empty where it is.
std::string peak_precision_unavailable(const torch::Device& device, const std::string& precision);

// Runs `run` `warmup` times untimed, then `steps` times each timed on its own, with `before` run
// untimed ahead of every run (on a GPU its work is queued ahead of the start event, so that none of it
// is timed); fills the rate's timer, times, median and spread from rate.flops. An operation LibTorch
// lacks here leaves the rate skipped.
void time_peak_runs(const torch::Device& device, int warmup, int steps, PeakRate& rate,
                    const std::function<void()>& before, const std::function<void()>& run);

}  // namespace batchscope
