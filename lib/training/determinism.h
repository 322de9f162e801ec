#pragma once

#include <ATen/Context.h>
#include <torch/torch.h>

#include <cstdlib>

#include "lib/device/environment.h"
#include "lib/records/records.h"

namespace batchscope::training_parts {

// Deterministic cuDNN and algorithms for one run on a CUDA device, and with tf32_off fp32 kept in fp32
// there (no TF32 convolutions or matrix products); the previous settings come back after. Without
// `deterministic` (train --deterministic off) the run takes LibTorch's cuDNN and algorithm settings as
// they are: its heuristics and whatever algorithms are fastest, as a user's own training runs, for the
// time it takes; tf32_off holds either way.
class DeterminismScope {
 public:
  DeterminismScope(const torch::Device& device, bool tf32_off, bool deterministic = true)
      : cuda_(device.is_cuda()), tf32_off_(tf32_off), deterministic_(deterministic) {
    if (!cuda_) return;
    auto& context = at::globalContext();
    tf32_ = current_tf32();
    if (tf32_off_) set_tf32(false);
    cudnn_deterministic_ = context.deterministicCuDNN();
    cudnn_benchmark_ = context.benchmarkCuDNN();
    algorithms_ = context.deterministicAlgorithms();
    warn_only_ = context.deterministicAlgorithmsWarnOnly();
    if (!deterministic_) return;
    // cuBLAS reads this when its first handle is made; without it its reductions may vary run to run.
    setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
    context.setDeterministicCuDNN(true);
    context.setBenchmarkCuDNN(false);
    context.setDeterministicAlgorithms(true, /*warn_only=*/true);
  }
  ~DeterminismScope() {
    if (!cuda_) return;
    auto& context = at::globalContext();
    if (deterministic_) {
      context.setDeterministicCuDNN(cudnn_deterministic_);
      context.setBenchmarkCuDNN(cudnn_benchmark_);
      context.setDeterministicAlgorithms(algorithms_, warn_only_);
    }
    context.setAllowTF32CuDNN(tf32_.cudnn_convolutions);
    context.setAllowTF32CuBLAS(tf32_.cublas_matmul);
  }
  DeterminismScope(const DeterminismScope&) = delete;
  DeterminismScope& operator=(const DeterminismScope&) = delete;

  Json record() const {
    if (!deterministic_) {
      Json loose = {{"cuda_switches", false}, {"deterministic", "off"}};
      if (!cuda_) return loose;
      // LibTorch's settings as the run found and kept them: its defaults unless the process changed them.
      loose["cudnn_deterministic"] = cudnn_deterministic_;
      loose["cudnn_benchmark"] = cudnn_benchmark_;
      loose["deterministic_algorithms"] = algorithms_ ? (warn_only_ ? "on, warn only" : "on") : "off";
      loose["tf32"] = tf32_off_ ? "off" : "default";
      return loose;
    }
    if (!cuda_) return {{"cuda_switches", false}};
    const char* cublas = std::getenv("CUBLAS_WORKSPACE_CONFIG");
    return {{"cuda_switches", true},
            {"cudnn_deterministic", true},
            {"cudnn_benchmark", false},
            {"deterministic_algorithms", "on, warn only"},
            {"cublas_workspace_config", cublas ? cublas : ""},
            {"tf32", tf32_off_ ? "off" : "default"}};
  }

 private:
  bool cuda_;
  bool tf32_off_;
  bool deterministic_;
  Tf32Settings tf32_;
  bool cudnn_deterministic_ = false, cudnn_benchmark_ = false, algorithms_ = false, warn_only_ = false;
};

}  // namespace batchscope::training_parts
