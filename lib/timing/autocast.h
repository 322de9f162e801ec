#pragma once

#include <torch/torch.h>

#include <optional>

#include "lib/config/config.h"

namespace batchscope {

// Autocast on for its lifetime in fp16 or bf16 (nothing in fp32), as torch.autocast does in Python
// around the forward pass and the loss. On exit the cast-weight cache is cleared, so each step pays
// for its own casts as a Python training step does.
class AutocastScope {
 public:
  AutocastScope(Precision precision, const torch::Device& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  void set(bool enabled, std::optional<at::ScalarType> dtype);

  bool active_;
  torch::DeviceType type_;
};

}  // namespace batchscope
