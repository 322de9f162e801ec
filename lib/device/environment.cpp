#include "lib/device/environment.h"

#include <sys/utsname.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "lib/device/cpu_threads.h"
#include "lib/device/gpu.h"
#include "lib/device/host_allocator.h"
#include "models/torchscript_fusion.h"

namespace batchscope {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

}  // namespace

int pcie_generation_from_speed(const std::string& speed) {
  const double gts = std::atof(speed.c_str());
  // Per-lane rates of PCIe generations 1 to 6.
  const double rates[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  for (int g = 0; g < 6; ++g) {
    if (gts > rates[g] * 0.95 && gts < rates[g] * 1.05) return g + 1;
  }
  return 0;
}

nlohmann::json pcie_link_from_sysfs(const std::string& bus_id, const std::string& sysfs_root) {
  const std::string dir = sysfs_root + "/" + bus_id + "/";
  const std::string speed = read_first_line(dir + "current_link_speed");
  const std::string width = read_first_line(dir + "current_link_width");
  if (speed.empty() || width.empty()) return nlohmann::json::object();
  return {{"speed", speed},
          {"generation", pcie_generation_from_speed(speed)},
          {"width", std::atoi(width.c_str())}};
}

std::string iso8601_utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

Tf32Settings current_tf32() {
  const at::Context& context = at::globalContext();
  return {context.allowTF32CuDNN(), context.allowTF32CuBLAS()};
}

Tf32Settings libtorch_tf32_defaults() {
  static const Tf32Settings defaults = current_tf32();
  return defaults;
}

void set_tf32(std::optional<bool> allowed) {
  const Tf32Settings defaults = libtorch_tf32_defaults();  // read before the first change
  at::Context& context = at::globalContext();
  context.setAllowTF32CuDNN(allowed.value_or(defaults.cudnn_convolutions));
  context.setAllowTF32CuBLAS(allowed.value_or(defaults.cublas_matmul));
}

std::string onednn_version(const std::string& build_config) {
  for (const char* name : {"MKL-DNN v", "oneDNN v"}) {
    const std::size_t at = build_config.find(name);
    if (at == std::string::npos) continue;
    const std::size_t from = at + std::char_traits<char>::length(name);
    const std::size_t to = build_config.find_first_not_of("0123456789.", from);
    const std::string version = build_config.substr(from, to == std::string::npos ? to : to - from);
    if (!version.empty()) return version;
  }
  return "";
}

std::map<std::string, std::string> cuda_allocator_environment() {
  return cpu_threads::environment_variables([](const std::string& name) {
    return name == "PYTORCH_CUDA_ALLOC_CONF" || name == "PYTORCH_ALLOC_CONF" ||
           name == "PYTORCH_NO_CUDA_MEMORY_CACHING";
  });
}

std::map<std::string, std::string> cuda_library_environment() {
  static const std::set<std::string> kNames = {
      "CUDNN_CONV_WSCAP_DBG",        "CUBLAS_WORKSPACE_CONFIG",           "CUBLASLT_WORKSPACE_SIZE",
      "NVIDIA_TF32_OVERRIDE",        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",  "CUDNN_ERRATA_JSON_FILE",
      "TORCH_CUDNN_V8_API_DISABLED", "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT"};
  return cpu_threads::environment_variables([](const std::string& name) { return kNames.count(name) > 0; });
}

nlohmann::json collect_environment() {
  utsname os{};
  uname(&os);
  nlohmann::json env = {
      {"host", host_name()},
      {"os", std::string(os.sysname) + " " + os.release + " " + os.machine},
      {"batchscope_version", BATCHSCOPE_VERSION},
      {"libtorch_version", TORCH_VERSION},
      {"cuda_in_libtorch", gpu::built_with_cuda()},
      {"cuda_runtime_version", gpu::cuda_runtime_version()},
      {"cudnn_version", gpu::cudnn_version()},
  };
  const cpu_threads::InEffect threads = cpu_threads::in_effect();
  nlohmann::json cpu = {{"model", cpu_model()},
                        {"logical_cores", std::thread::hardware_concurrency()},
                        {"usable_physical_cores", threads.usable_cores},
                        {"torch_threads", threads.intra_op},
                        {"torch_interop_threads", threads.inter_op},
                        {"threads_from", cpu_threads::to_json(threads)["from"]}};
  if (!threads.environment.empty()) cpu["threading_environment"] = threads.environment;
  if (const auto allocator = host_allocator::environment(); !allocator.empty()) cpu["allocator_environment"] = allocator;
  cpu["malloc"] = host_allocator::to_json(host_allocator::in_effect());
  // Whether LibTorch may run CPU convolutions in oneDNN: batchscope disables a oneDNN known to crash
  // (models::avoid_known_library_faults), and the same step is slower without it.
  if (const std::string onednn = onednn_version(at::show_config()); !onednn.empty())
    cpu["onednn"] = {{"version", onednn}, {"enabled", at::globalContext().userEnabledMkldnn()}};
  // Whether a TorchScript file's CPU graphs run in kernels TorchScript fuses and compiles itself, or
  // operator by operator (batchscope turns the fuser off: models/registry.h).
  cpu["torchscript_fuser"] = torch::jit::canFuseOnCPU();
  env["cpu"] = cpu;
  if (gpu::built_with_cuda()) {
    // LibTorch lets cuDNN run fp32 convolutions in TF32 unless told otherwise (matrix products stay fp32),
    // so a GPU's "fp32" numbers say which math they were: LibTorch's defaults here, an experiment's tf32
    // setting in its config where it has one.
    const Tf32Settings defaults = libtorch_tf32_defaults();
    env["tf32"] = {{"cudnn_convolutions", defaults.cudnn_convolutions}, {"cublas_matmul", defaults.cublas_matmul}};
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (int i = 0; i < gpu::device_count(); ++i) gpus.push_back(gpu::device_info(i));
  env["gpus"] = gpus;
  if (const auto allocator = cuda_allocator_environment(); !allocator.empty())
    env["cuda_allocator_environment"] = allocator;
  if (const auto library = cuda_library_environment(); !library.empty())
    env["cuda_library_environment"] = library;
  return env;
}

std::string format_environment(const nlohmann::json& env) {
  std::ostringstream out;
  out << "host:          " << env.value("host", "") << "\n"
      << "os:            " << env.value("os", "") << "\n"
      << "batchscope:    " << env.value("batchscope_version", "") << "\n"
      << "libtorch:      " << env.value("libtorch_version", "")
      << (env.value("cuda_in_libtorch", false) ? " (with CUDA)" : " (CPU only)") << "\n";
  if (!env.value("cuda_runtime_version", "").empty())
    out << "cuda runtime:  " << env["cuda_runtime_version"].get<std::string>() << "\n";
  if (!env.value("cudnn_version", "").empty())
    out << "cudnn:         " << env["cudnn_version"].get<std::string>() << "\n";
  if (env.contains("tf32"))
    out << "tf32 default:  convolutions " << (env["tf32"].value("cudnn_convolutions", false) ? "yes" : "no")
        << ", matrix products " << (env["tf32"].value("cublas_matmul", false) ? "yes" : "no") << "\n";
  const auto& cpu = env.at("cpu");
  out << "cpu:           " << cpu.value("model", "") << ", " << cpu.value("logical_cores", 0)
      << " logical cores, " << cpu.value("usable_physical_cores", 0) << " usable physical cores, "
      << cpu.value("torch_threads", 0) << " torch threads (" << cpu.value("threads_from", "") << "), "
      << cpu.value("torch_interop_threads", 0) << " inter-op\n";
  if (cpu.contains("onednn")) {
    const bool enabled = cpu["onednn"].value("enabled", true);
    out << "onednn:        " << cpu["onednn"].value("version", "")
        << (enabled ? ", enabled" : ", disabled: CPU convolutions run in LibTorch's own kernels") << "\n";
  }
  if (cpu.contains("torchscript_fuser")) {
    out << "torchscript:   "
        << (cpu["torchscript_fuser"].get<bool>() ? "CPU graphs fused" : "CPU graphs run operator by operator")
        << "\n";
  }
  if (cpu.contains("malloc")) {
    const auto& malloc = cpu["malloc"];
    const std::string thresholds = malloc.value("thresholds", "");
    out << "malloc:        ";
    if (thresholds == "fixed") {
      out << "glibc's thresholds fixed by batchscope (mmap " << (malloc.value("mmap_threshold_bytes", 0LL) >> 20)
          << " MiB, trim " << (malloc.value("trim_threshold_bytes", 0LL) >> 20) << " MiB)\n";
    } else {
      out << (thresholds == "environment" ? "as the environment sets it" : "glibc's own moving thresholds");
      if (malloc.contains("decided_by")) out << " (" << malloc.value("decided_by", "") << ")";
      out << "\n";
    }
  }
  for (const auto& [key, label] :
       {std::pair<const char*, const char*>{"cuda_allocator_environment", "cuda allocator:"},
        {"cuda_library_environment", "cuda libraries:"}}) {
    if (!env.contains(key) || !env[key].is_object()) continue;
    out << label;
    for (const auto& [name, value] : env[key].items())
      out << " " << name << "=" << (value.is_string() ? value.get<std::string>() : value.dump());
    out << "\n";
  }
  if (env.at("gpus").empty()) out << "gpus:          none\n";
  for (const auto& g : env.at("gpus")) {
    out << "gpu " << g.value("index", 0) << ":         " << g.value("name", "") << ", "
        << g.value("total_memory_bytes", int64_t{0}) / (1024 * 1024) << " MiB, " << g.value("sm_count", 0)
        << " SMs, compute " << g.value("compute_capability", "");
    if (g.contains("pcie") && g["pcie"].contains("generation")) {
      out << ", PCIe gen " << g["pcie"]["generation"].get<int>() << " x" << g["pcie"]["width"].get<int>();
    }
    out << "\n";
  }
  return out.str();
}

std::string make_run_id() {
  std::random_device seed;
  std::mt19937_64 rng(seed());
  char suffix[9];
  std::snprintf(suffix, sizeof suffix, "%08x", static_cast<unsigned>(rng() & 0xffffffffu));
  std::string time = iso8601_utc_now();
  for (char& c : time) {
    if (c == ':' || c == '-') c = '_';
  }
  return time + "-" + suffix;
}

}  // namespace batchscope
