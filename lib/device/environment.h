#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace batchscope {

// What a result needs beside it to mean something: host, versions, CPU, threads and every GPU.
nlohmann::json collect_environment();
// The variables that set LibTorch's CUDA caching allocator (PYTORCH_CUDA_ALLOC_CONF, PYTORCH_ALLOC_CONF,
// PYTORCH_NO_CUDA_MEMORY_CACHING), those that are set, by name. How much fits depends on them: with the
// default settings a size that runs one step may not run a second, whose tensors no longer find room
// among the blocks the first left cached. The run record lists them as cuda_allocator_environment.
std::map<std::string, std::string> cuda_allocator_environment();
// The variables that change which kernels cuDNN and cuBLAS run, those that are set, by name: cuDNN's
// workspace cap (CUDNN_CONV_WSCAP_DBG, MiB), which rules out the algorithms that need more; cuBLAS's
// workspaces (CUBLAS_WORKSPACE_CONFIG, CUBLASLT_WORKSPACE_SIZE); TF32 turned off beneath LibTorch's own
// setting (NVIDIA_TF32_OVERRIDE, TORCH_ALLOW_TF32_CUBLAS_OVERRIDE); cuDNN's errata file and LibTorch's
// cuDNN API switches. The run record lists them as cuda_library_environment.
std::map<std::string, std::string> cuda_library_environment();
// The same as indented "key: value" lines for a terminal.
std::string format_environment(const nlohmann::json& env);

// Current PCIe link of a device from /sys/bus/pci/devices/BUS_ID ({} where unreadable):
// {"generation": 4, "width": 16, "speed": "16.0 GT/s PCIe"}.
nlohmann::json pcie_link_from_sysfs(const std::string& bus_id,
                                    const std::string& sysfs_root = "/sys/bus/pci/devices");
// "16.0 GT/s PCIe" -> 4; 0 when the speed is not a known PCIe rate.
int pcie_generation_from_speed(const std::string& speed);

// Whether fp32 convolutions (cuDNN) and matrix products (cuBLAS) may run in TF32.
struct Tf32Settings {
  bool cudnn_convolutions = false;
  bool cublas_matmul = false;
};
// LibTorch's own settings, as they were before set_tf32 first changed them.
Tf32Settings libtorch_tf32_defaults();
// Both allowed (true), both refused (false), or LibTorch's own settings again (nullopt).
void set_tf32(std::optional<bool> allowed);
// The settings in effect now.
Tf32Settings current_tf32();

// The oneDNN (once MKL-DNN) version LibTorch's build configuration (at::show_config()) names: "3.7.2";
// "" where it names none.
std::string onednn_version(const std::string& build_config);

std::string iso8601_utc_now();

// A run's identity: its UTC start time and 32 random bits, e.g. 2026_11_22T00_07_13Z-be6a0ae4.
std::string make_run_id();

}  // namespace batchscope
