#pragma once

#include <torch/csrc/Export.h>

// Whether TorchScript's graph executor fuses the operators of a graph that runs on the CPU into kernels it
// compiles itself (the TensorExpr fuser, with LLVM). Only a LibTorch built with LLVM can, and does so by
// default: Debian 13's LibTorch 2.6 is; Debian 12's 1.13 and PyTorch's own releases are not. The GPU's
// fusers are another switch. LibTorch exports both functions (PyTorch's torch._C._jit_can_fuse_on_cpu and
// _jit_override_can_fuse_on_cpu call them) but installs no header that declares them.
namespace torch::jit {
TORCH_API bool canFuseOnCPU();
TORCH_API void overrideCanFuseOnCPU(bool value);
}  // namespace torch::jit
