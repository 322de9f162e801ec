#pragma once

#include <nlohmann/json.hpp>
#include <limits>
#include <optional>
#include <string>

namespace batchscope::power {

// One reading of what a device is doing; a field is absent where the source cannot tell.
struct Telemetry {
  std::optional<double> power_w;
  std::optional<double> sm_clock_mhz;
  std::optional<double> memory_clock_mhz;
  std::optional<double> temperature_c;
  // Share of the driver's last sample period (1/6 s to 1 s) in which a kernel ran.
  std::optional<double> utilization_pct;
};

// Where energy readings come from: NVML for a GPU, RAPL for the CPU packages, or a fake in tests.
class PowerSource {
 public:
  virtual ~PowerSource() = default;

  // How energy is obtained, for records: "nvml energy counter", "nvml power samples", "rapl".
  virtual std::string method() const = 0;
  // What is measured, e.g. "GPU 0000:3B:00.0 board" or "CPU packages package-0, package-1".
  virtual std::string scope() const = 0;
  // Energy since an arbitrary origin in joules, never decreasing (counter wrap-arounds undone), or
  // nullopt when the source has no counter and its power has to be sampled and integrated.
  virtual std::optional<double> energy_j() = 0;
  // Present power draw (as averaged by the driver); nullopt where unknown.
  virtual std::optional<double> power_w() = 0;
  // How often energy_j() or power_w() change. A window must span many of these to be trusted.
  virtual double resolution_ms() const = 0;
  // How often energy_j() must be read for its wrap-arounds to be undone: a counter that wraps is read
  // at least this often during a window. Infinite for counters that never wrap and for sources
  // without one.
  virtual double read_every_ms() const { return std::numeric_limits<double>::infinity(); }
  virtual Telemetry telemetry() = 0;
  // Static facts for the run record: power limit, PCIe link, device name, counter availability.
  virtual nlohmann::json info() = 0;
};

}  // namespace batchscope::power
