#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/timing/peak_rate.h"

namespace batchscope {

// Each convolution and linear layer of a model timed alone, in its own shape (batchscope peak --model):
// the roof of that layer, where the one convolution of `peak --operation conv` is the roof of a typical
// layer only. analyze --peak reads each layer's rate in a profiled step against its rate alone, so that
// a layer held back by its shape (3 input channels, a small image) tells itself from one held back by
// the step (layout conversions, the kernels around it).

struct LayerPeakOptions {
  std::string model;
  std::vector<int64_t> input;  // one sample's shape, as a sweep's input
  int64_t classes = 0;
  std::vector<int64_t> batches;
  // On a GPU: cuDNN's search for the fastest algorithm of each shape (benchmark mode), or its heuristics
  // alone, as a sweep without --cudnn-benchmark runs. Nothing on a CPU.
  bool cudnn_benchmark = true;
  int warmup = 5;
  int steps = 20;
  // Runs of each pass once more under the profiler, after the timed ones (PeakRate.profiled_ms); 0: none.
  int profiled_runs = 5;
};

// The layers of options.model, as analyze lays out its GEMM layers (tile_model's gemm_layers), each alone
// at each batch, in each memory layout (a linear layer in the first layout only: it has none of its own),
// in the precision (fp32 IEEE, tf32, or bf16/fp16 under autocast with fp32 weights, as a sweep runs) and
// phase: train times the forward pass (autograd recording, train mode) and the backward pass (the
// weights' gradient, and the input's for all but the first layer) each on its own; infer the forward
// pass under no-grad in eval mode. The layer's own module runs (its bias, stride and groups), on inputs
// of the shape and type it sees in a step, with cuDNN's benchmark mode on a GPU where asked. FLOPs as analyze
// counts a layer's (gemm_flops_per_sample). Each pass is then run options.profiled_runs times under the
// profiler and timed as a profiled step times its layers (lib/timing/profiled_steps.h). Throws
// std::invalid_argument for a model without such layers or bad options; a precision the device lacks comes
// back as one skipped rate.
std::vector<PeakRate> measure_layer_peak_rates(const torch::Device& device, const std::string& precision,
                                               const std::string& phase,
                                               const std::vector<std::string>& memory_formats,
                                               const LayerPeakOptions& options);

}  // namespace batchscope
