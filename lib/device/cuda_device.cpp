#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>

#include <cstdio>
#include <vector>

#include "lib/device/environment.h"
#include "lib/device/gpu.h"
#include "lib/timing/step_timer.h"

namespace batchscope::gpu {
namespace {

// A start and a stop event per step on the device's current stream, the stream LibTorch's kernels
// run on. Events are created and recorded once in reserve(), so the timed loop allocates nothing.
class CudaEventTimer : public StepTimer {
 public:
  explicit CudaEventTimer(int index)
      : stream_(c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(index))) {}

  void reserve(int steps) override {
    starts_.clear();
    stops_.clear();
    for (int i = 0; i < steps; ++i) {
      starts_.emplace_back(cudaEventDefault);
      stops_.emplace_back(cudaEventDefault);
      starts_.back().record(stream_);
      stops_.back().record(stream_);
    }
    stream_.synchronize();
  }
  void start(int step) override { starts_[static_cast<std::size_t>(step)].record(stream_); }
  void stop(int step) override { stops_[static_cast<std::size_t>(step)].record(stream_); }
  double elapsed_ms(int step) override {
    const auto i = static_cast<std::size_t>(step);
    stops_[i].synchronize();
    return starts_[i].elapsed_time(stops_[i]);
  }
  const char* method() const override { return "cuda_event"; }

 private:
  c10::cuda::CUDAStream stream_;
  std::vector<at::cuda::CUDAEvent> starts_, stops_;
};

}  // namespace

bool built_with_cuda() { return true; }

int device_count() { return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; }

nlohmann::json device_info(int index) {
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(index);
  char bus_id[32];
  std::snprintf(bus_id, sizeof bus_id, "%04x:%02x:%02x.0", static_cast<unsigned>(p->pciDomainID),
                static_cast<unsigned>(p->pciBusID), static_cast<unsigned>(p->pciDeviceID));
  nlohmann::json j = {{"index", index},
                      {"name", p->name},
                      {"total_memory_bytes", static_cast<int64_t>(p->totalGlobalMem)},
                      {"sm_count", p->multiProcessorCount},
                      {"compute_capability", std::to_string(p->major) + "." + std::to_string(p->minor)},
                      {"pci_bus_id", bus_id}};
  j["pcie"] = pcie_link_from_sysfs(bus_id);
  return j;
}

std::string cuda_runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) return "";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string cudnn_version() {
  if (!at::globalContext().hasCuDNN()) return "";
  const long v = at::detail::getCUDAHooks().versionCuDNN();
  // cuDNN 9 encodes major*10000 + minor*100 + patch, earlier versions major*1000 + minor*100 + patch.
  const long major = v >= 90000 ? v / 10000 : v / 1000;
  const long minor = v >= 90000 ? (v % 10000) / 100 : (v % 1000) / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

void synchronize(int index) {
  c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(index)).synchronize();
}

void empty_cache() { c10::cuda::CUDACachingAllocator::emptyCache(); }

void set_memory_fraction(int index, double fraction) {
  // The caching allocator exists once CUDA is initialised, which LibTorch does lazily, at a device's first
  // tensor: a fraction set before that (a sweep's --memory-limit, maxbatch's margin before its model is
  // built) would find no allocator for the device. One small tensor initialises it, on every version.
  at::empty({1}, at::TensorOptions().device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index))));
  c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, static_cast<c10::DeviceIndex>(index));
}

void reset_peak_memory(int index) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
}

int64_t peak_memory_bytes(int index) {
  // Index 0 is the aggregate over the allocator's pools in every LibTorch version; the names of the
  // stats types have moved between namespaces over the versions, the layout has not.
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
  return stats.allocated_bytes[0].peak;
}

std::unique_ptr<StepTimer> make_event_timer(int index) { return std::make_unique<CudaEventTimer>(index); }

}  // namespace batchscope::gpu
