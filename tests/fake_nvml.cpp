// A stand-in for libnvidia-ml.so.1 with one GPU at PCI bus 0000:3b:00.0 drawing a steady 250 W, so the
// NVML source is tested where no driver is installed. FAKE_NVML_NO_COUNTER=1 makes it a pre-Volta board
// without the total-energy counter. Only the entry points batchscope resolves are here.
#include <strings.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

// NVML's C types at global scope, as nvml.h declares them.
struct nvmlDevice_st {
  int index;
};
struct nvmlUtilization_st {
  unsigned int gpu, memory;
};

namespace {

constexpr int kSuccess = 0;
constexpr int kNotSupported = 3;
constexpr int kNotFound = 6;
constexpr double kPowerW = 250;

nvmlDevice_st the_gpu{0};

const auto loaded = std::chrono::steady_clock::now();

bool without_counter() {
  const char* value = std::getenv("FAKE_NVML_NO_COUNTER");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace

extern "C" {

int nvmlInit_v2() { return kSuccess; }
int nvmlShutdown() { return kSuccess; }
const char* nvmlErrorString(int code) { return code == kNotFound ? "Not Found" : "Not Supported"; }

int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_st** device) {
  if (strcasecmp(bus_id, "0000:3b:00.0") != 0) return kNotFound;
  *device = &the_gpu;
  return kSuccess;
}

int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_st*, unsigned long long* millijoules) {
  if (without_counter()) return kNotSupported;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loaded).count();
  *millijoules = static_cast<unsigned long long>(kPowerW * seconds * 1000);
  return kSuccess;
}

int nvmlDeviceGetPowerUsage(nvmlDevice_st*, unsigned int* milliwatts) {
  *milliwatts = static_cast<unsigned int>(kPowerW * 1000);
  return kSuccess;
}

int nvmlDeviceGetClockInfo(nvmlDevice_st*, int type, unsigned int* mhz) {
  *mhz = type == 1 ? 1980 : 2619;  // SM, memory
  return kSuccess;
}

int nvmlDeviceGetTemperature(nvmlDevice_st*, int, unsigned int* celsius) {
  *celsius = 45;
  return kSuccess;
}

int nvmlDeviceGetUtilizationRates(nvmlDevice_st*, nvmlUtilization_st* rates) {
  *rates = {97, 40};
  return kSuccess;
}

int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_st*, unsigned int* milliwatts) {
  *milliwatts = 700000;
  return kSuccess;
}

int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_st*, unsigned int* value) {
  *value = 5;
  return kSuccess;
}
int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_st*, unsigned int* value) {
  *value = 16;
  return kSuccess;
}
int nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_st*, unsigned int* value) {
  *value = 5;
  return kSuccess;
}
int nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_st*, unsigned int* value) {
  *value = 16;
  return kSuccess;
}

int nvmlDeviceGetName(nvmlDevice_st*, char* name, unsigned int length) {
  std::strncpy(name, "Fake GPU", length);
  return kSuccess;
}

int nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  std::strncpy(version, "999.1", length);
  return kSuccess;
}

int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_st*, unsigned long long* reasons) {
  *reasons = 0;
  return kSuccess;
}

}  // extern "C"
