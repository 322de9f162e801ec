#include "lib/power/nvml_source.h"

#include <dlfcn.h>

#include <map>
#include <mutex>

// NVML's C types at global scope, as nvml.h declares them, so that the entry points are called through
// pointers of their own types.
struct nvmlDevice_st;
struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
};

namespace batchscope::power {
namespace {

// The few declarations of nvml.h used here (values as in NVIDIA's header), so that batchscope
// builds without it. Enum arguments are passed as int, which is how C passes them.
using nvmlReturn_t = int;
using nvmlDevice_t = ::nvmlDevice_st*;
using nvmlUtilization_t = ::nvmlUtilization_st;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr int NVML_CLOCK_SM = 1;
constexpr int NVML_CLOCK_MEM = 2;
constexpr int NVML_TEMPERATURE_GPU = 0;
constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;

// The total-energy counter visibly moves about every 10 ms (slower on some boards), so a window
// needs to be far longer than that.
constexpr double kCounterResolutionMs = 10;
// nvmlDeviceGetPowerUsage is an average the driver refreshes every 1/6 s to 1 s depending on the
// board (averaged over 1 s on Ampere and newer, GA100 excepted), so the fastest case is assumed.
constexpr double kPowerSampleResolutionMs = 1000.0 / 6;

// NVML's entry points. The first three are required; a missing other one leaves its field absent.
struct Nvml {
  std::string error;  // why NVML cannot be used; empty when it can
  bool initialised = false;

  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*handle_by_pci_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned int*) = nullptr;

  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*total_energy)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*clock_info)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*enforced_power_limit)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*current_pcie_generation)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*current_pcie_width)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*max_pcie_generation)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*max_pcie_width)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*device_name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*throttle_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;

  Nvml() = default;
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  // At process exit; the library itself stays mapped.
  ~Nvml() {
    if (initialised && shutdown) shutdown();
  }

  std::string describe(nvmlReturn_t code) const {
    const char* text = error_string ? error_string(code) : nullptr;
    return text ? text : "NVML error " + std::to_string(code);
  }
};

template <typename Function>
void resolve(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
}

std::string last_dl_error() {
  const char* text = dlerror();
  return text ? text : "unknown error";
}

std::unique_ptr<Nvml> load_nvml(const std::string& path) {
  auto nvml = std::make_unique<Nvml>();
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    nvml->error = "NVML could not be loaded (" + last_dl_error() + "); GPU energy is not measured.";
    return nvml;
  }
  resolve(library, "nvmlInit_v2", nvml->init);
  resolve(library, "nvmlDeviceGetHandleByPciBusId_v2", nvml->handle_by_pci_bus_id);
  resolve(library, "nvmlDeviceGetPowerUsage", nvml->power_usage);
  const char* missing = !nvml->init                   ? "nvmlInit_v2"
                        : !nvml->handle_by_pci_bus_id ? "nvmlDeviceGetHandleByPciBusId_v2"
                        : !nvml->power_usage          ? "nvmlDeviceGetPowerUsage"
                                                      : nullptr;
  if (missing) {
    nvml->error = "The NVML in " + path + " has no " + missing + "; GPU energy is not measured.";
    dlclose(library);
    return nvml;
  }
  resolve(library, "nvmlShutdown", nvml->shutdown);
  resolve(library, "nvmlErrorString", nvml->error_string);
  resolve(library, "nvmlDeviceGetTotalEnergyConsumption", nvml->total_energy);
  resolve(library, "nvmlDeviceGetClockInfo", nvml->clock_info);
  resolve(library, "nvmlDeviceGetTemperature", nvml->temperature);
  resolve(library, "nvmlDeviceGetUtilizationRates", nvml->utilization);
  resolve(library, "nvmlDeviceGetEnforcedPowerLimit", nvml->enforced_power_limit);
  resolve(library, "nvmlDeviceGetCurrPcieLinkGeneration", nvml->current_pcie_generation);
  resolve(library, "nvmlDeviceGetCurrPcieLinkWidth", nvml->current_pcie_width);
  resolve(library, "nvmlDeviceGetMaxPcieLinkGeneration", nvml->max_pcie_generation);
  resolve(library, "nvmlDeviceGetMaxPcieLinkWidth", nvml->max_pcie_width);
  resolve(library, "nvmlDeviceGetName", nvml->device_name);
  resolve(library, "nvmlSystemGetDriverVersion", nvml->driver_version);
  // Driver 535 renamed it ClocksEventReasons and deprecated the old name; older drivers have only that.
  resolve(library, "nvmlDeviceGetCurrentClocksEventReasons", nvml->throttle_reasons);
  if (!nvml->throttle_reasons)
    resolve(library, "nvmlDeviceGetCurrentClocksThrottleReasons", nvml->throttle_reasons);

  const nvmlReturn_t started = nvml->init();
  if (started != NVML_SUCCESS) {
    nvml->error = "NVML could not start (" + nvml->describe(started) + "); GPU energy is not measured.";
    dlclose(library);
    return nvml;
  }
  nvml->initialised = true;
  return nvml;
}

// NVML from `path`, loaded and initialised once per process. It is never closed: sources call
// through its function pointers for as long as they live, which may be until exit.
const Nvml& nvml_from(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Nvml>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto& nvml = loaded[path];
  if (!nvml) nvml = load_nvml(path);
  return *nvml;
}

// The value an NVML getter reports, or nullopt where the getter is missing or fails.
template <typename Value>
std::optional<Value> query(nvmlReturn_t (*getter)(nvmlDevice_t, Value*), nvmlDevice_t device) {
  Value value{};
  if (getter && getter(device, &value) == NVML_SUCCESS) return value;
  return std::nullopt;
}

// The same for getters that take a kind (a clock domain, a temperature sensor) first.
template <typename Value>
std::optional<Value> query(nvmlReturn_t (*getter)(nvmlDevice_t, int, Value*), nvmlDevice_t device, int kind) {
  Value value{};
  if (getter && getter(device, kind, &value) == NVML_SUCCESS) return value;
  return std::nullopt;
}

class NvmlSource : public PowerSource {
 public:
  NvmlSource(const Nvml& nvml, nvmlDevice_t device, std::string pci_bus_id, bool counter)
      : nvml_(nvml), device_(device), pci_bus_id_(std::move(pci_bus_id)), counter_(counter) {}

  std::string method() const override { return counter_ ? "nvml energy counter" : "nvml power samples"; }
  std::string scope() const override { return "GPU " + pci_bus_id_ + " board"; }

  // Millijoules since the driver loaded. The counter has 64 bits, so it does not wrap in practice.
  std::optional<double> energy_j() override {
    if (!counter_) return std::nullopt;
    const auto mj = query(nvml_.total_energy, device_);
    if (!mj) return std::nullopt;
    return static_cast<double>(*mj) / 1000;
  }

  std::optional<double> power_w() override {
    const auto mw = query(nvml_.power_usage, device_);
    if (!mw) return std::nullopt;
    return *mw / 1000.0;
  }

  double resolution_ms() const override { return counter_ ? kCounterResolutionMs : kPowerSampleResolutionMs; }

  Telemetry telemetry() override {
    Telemetry t;
    t.power_w = power_w();
    if (const auto mhz = query(nvml_.clock_info, device_, NVML_CLOCK_SM)) t.sm_clock_mhz = *mhz;
    if (const auto mhz = query(nvml_.clock_info, device_, NVML_CLOCK_MEM)) t.memory_clock_mhz = *mhz;
    if (const auto c = query(nvml_.temperature, device_, NVML_TEMPERATURE_GPU)) t.temperature_c = *c;
    if (const auto u = query(nvml_.utilization, device_)) t.utilization_pct = u->gpu;
    return t;
  }

  // Absent fields are ones this driver or board does not report.
  nlohmann::json info() override {
    nlohmann::json info = {{"pci_bus_id", pci_bus_id_}, {"energy_counter", counter_}, {"method", method()}};
    char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (nvml_.device_name && nvml_.device_name(device_, text, sizeof text) == NVML_SUCCESS)
      info["name"] = text;
    char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    if (nvml_.driver_version && nvml_.driver_version(version, sizeof version) == NVML_SUCCESS)
      info["driver_version"] = version;
    if (const auto mw = query(nvml_.enforced_power_limit, device_)) info["power_limit_w"] = *mw / 1000.0;
    nlohmann::json pcie = nlohmann::json::object();
    const std::pair<const char*, nvmlReturn_t (*)(nvmlDevice_t, unsigned int*)> links[] = {
        {"current_generation", nvml_.current_pcie_generation},
        {"current_width", nvml_.current_pcie_width},
        {"max_generation", nvml_.max_pcie_generation},
        {"max_width", nvml_.max_pcie_width},
    };
    for (const auto& [key, getter] : links) {
      if (const auto value = query(getter, device_)) pcie[key] = *value;
    }
    if (!pcie.empty()) info["pcie"] = pcie;
    // A bitmask of nvmlClocksThrottleReason* bits as of this call (0: clocks are not held back).
    if (const auto reasons = query(nvml_.throttle_reasons, device_))
      info["clocks_throttle_reasons"] = *reasons;
    return info;
  }

 private:
  const Nvml& nvml_;
  nvmlDevice_t device_;
  std::string pci_bus_id_;
  bool counter_;
};

}  // namespace

std::unique_ptr<PowerSource> open_nvml_source(const std::string& pci_bus_id, std::string& reason,
                                              const std::string& library) {
  const Nvml& nvml = nvml_from(library);
  if (!nvml.error.empty()) {
    reason = nvml.error;
    return nullptr;
  }
  nvmlDevice_t device = nullptr;
  const nvmlReturn_t found = nvml.handle_by_pci_bus_id(pci_bus_id.c_str(), &device);
  if (found != NVML_SUCCESS) {
    reason = "NVML does not know the GPU at PCI bus " + pci_bus_id + " (" + nvml.describe(found) +
             "); its energy is not measured.";
    return nullptr;
  }
  // The counter exists from Volta on; older boards only report power, which is then sampled.
  const bool counter = query(nvml.total_energy, device).has_value();
  unsigned int mw = 0;
  const nvmlReturn_t powered = nvml.power_usage(device, &mw);
  if (!counter && powered != NVML_SUCCESS) {
    reason = "NVML reports neither an energy counter nor the power of the GPU at PCI bus " + pci_bus_id +
             " (" + nvml.describe(powered) + "); its energy is not measured.";
    return nullptr;
  }
  return std::make_unique<NvmlSource>(nvml, device, pci_bus_id, counter);
}

}  // namespace batchscope::power
