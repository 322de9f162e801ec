#include <stdexcept>

#include "lib/device/gpu.h"
#include "lib/timing/step_timer.h"

namespace batchscope::gpu {
namespace {
[[noreturn]] void no_cuda() {
  // The sweep checks device_count() before it touches a CUDA device, so reaching this is a bug.
  throw std::logic_error("this batchscope was built against a LibTorch without CUDA");
}
}  // namespace

bool built_with_cuda() { return false; }
int device_count() { return 0; }
nlohmann::json device_info(int) { no_cuda(); }
std::string cuda_runtime_version() { return ""; }
std::string cudnn_version() { return ""; }
void synchronize(int) { no_cuda(); }
void empty_cache() {}
void reset_peak_memory(int) { no_cuda(); }
void set_memory_fraction(int, double) { no_cuda(); }
int64_t peak_memory_bytes(int) { no_cuda(); }
std::unique_ptr<StepTimer> make_event_timer(int) { no_cuda(); }

}  // namespace batchscope::gpu
