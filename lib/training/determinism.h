#pragma once

#include <ATen/Context.h>
#include <torch/torch.h>

#include <cstdlib>

#include "lib/records/records.h"

namespace batchscope::training_parts {

// Deterministic cuDNN and algorithms for one run on a CUDA device; the previous settings come back after.
class DeterminismScope {
 public:
  explicit DeterminismScope(const torch::Device& device) : active_(device.is_cuda()) {
    if (!active_) return;
    auto& context = at::globalContext();
    cudnn_deterministic_ = context.deterministicCuDNN();
    cudnn_benchmark_ = context.benchmarkCuDNN();
    algorithms_ = context.deterministicAlgorithms();
    warn_only_ = context.deterministicAlgorithmsWarnOnly();
    // cuBLAS reads this when its first handle is made; without it its reductions may vary run to run.
    setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
    context.setDeterministicCuDNN(true);
    context.setBenchmarkCuDNN(false);
    context.setDeterministicAlgorithms(true, /*warn_only=*/true);
  }
  ~DeterminismScope() {
    if (!active_) return;
    auto& context = at::globalContext();
    context.setDeterministicCuDNN(cudnn_deterministic_);
    context.setBenchmarkCuDNN(cudnn_benchmark_);
    context.setDeterministicAlgorithms(algorithms_, warn_only_);
  }
  DeterminismScope(const DeterminismScope&) = delete;
  DeterminismScope& operator=(const DeterminismScope&) = delete;

  Json record() const {
    if (!active_) return {{"cuda_switches", false}};
    const char* cublas = std::getenv("CUBLAS_WORKSPACE_CONFIG");
    return {{"cuda_switches", true},
            {"cudnn_deterministic", true},
            {"cudnn_benchmark", false},
            {"deterministic_algorithms", "on, warn only"},
            {"cublas_workspace_config", cublas ? cublas : ""}};
  }

 private:
  bool active_;
  bool cudnn_deterministic_ = false, cudnn_benchmark_ = false, algorithms_ = false, warn_only_ = false;
};

}  // namespace batchscope::training_parts
