#include "lib/timing/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define BATCHSCOPE_AUTOCAST_BY_DEVICE_TYPE 1
#endif

namespace batchscope {
namespace {

at::ScalarType autocast_dtype(Precision p) { return p == Precision::FP16 ? at::kHalf : at::kBFloat16; }

}  // namespace

AutocastScope::AutocastScope(Precision precision, const torch::Device& device)
    : active_(precision != Precision::FP32), type_(device.type()) {
  if (active_) set(true, autocast_dtype(precision));
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  set(false, std::nullopt);
  at::autocast::clear_cache();
}

void AutocastScope::set(bool enabled, std::optional<at::ScalarType> dtype) {
#ifdef BATCHSCOPE_AUTOCAST_BY_DEVICE_TYPE
  if (dtype) at::autocast::set_autocast_dtype(type_, *dtype);
  at::autocast::set_autocast_enabled(type_, enabled);
#else
  if (type_ == torch::kCUDA) {
    if (dtype) at::autocast::set_autocast_gpu_dtype(*dtype);
    at::autocast::set_enabled(enabled);
  } else {
    if (dtype) at::autocast::set_autocast_cpu_dtype(*dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

}  // namespace batchscope
