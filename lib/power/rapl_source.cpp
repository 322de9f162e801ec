#include "lib/power/rapl_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "lib/power/energy_meter.h"

namespace batchscope::power {
namespace {

// RAPL refreshes its energy status about every millisecond.
constexpr double kResolutionMs = 1;
// More than any CPU package draws today (server parts are specified up to about 500 W). A counter is read
// at least twice in the time it takes to climb through its range at this power.
constexpr double kMaxPackagePowerW = 1000;

struct Package {
  int index = 0;     // N of intel-rapl:N
  std::string zone;  // "intel-rapl:0"
  std::string name;  // "package-0"
  std::string energy_path;
  uint64_t max_range_uj = 0;
  uint64_t last_uj = 0;   // the last raw reading
  uint64_t total_uj = 0;  // energy since the source was opened, wrap-arounds undone
};

// N for a top-level zone named "intel-rapl:N"; -1 for anything else (subzones intel-rapl:N:M,
// intel-rapl-mmio:N, stray files).
int top_level_zone_index(const std::string& dir_name) {
  const std::string prefix = "intel-rapl:";
  if (dir_name.size() <= prefix.size() || dir_name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string number = dir_name.substr(prefix.size());
  if (number.size() > 6 ||
      !std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoi(number);
}

// Reads a sysfs file holding one unsigned number. On failure returns false with the cause in `error`
// and the errno in `error_number` (0 when the file was read but holds no number).
bool read_number(const std::string& path, uint64_t& value, std::string& error, int& error_number) {
  error_number = 0;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) error_number = errno;
  char text[32] = {};
  if (fd >= 0 && ::read(fd, text, sizeof text - 1) < 0) error_number = errno;
  if (fd >= 0) ::close(fd);
  if (error_number != 0) {
    error = std::strerror(error_number);
    return false;
  }
  char* end = nullptr;
  errno = 0;
  value = std::strtoull(text, &end, 10);
  if (end == text || errno != 0) {
    error = "it does not hold a number";
    return false;
  }
  return true;
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

class RaplSource : public PowerSource {
 public:
  explicit RaplSource(std::vector<Package> packages)
      : packages_(std::move(packages)), last_power_ms_(steady_now_ms()) {}

  std::string method() const override { return "rapl"; }

  std::string scope() const override {
    std::string names;
    for (const auto& p : packages_) names += (names.empty() ? "" : ", ") + p.name;
    return "CPU packages " + names;
  }

  std::optional<double> energy_j() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return read_joules();
  }

  // The average power since the previous call (or since the source was opened). A call less than
  // a resolution after it returns nullopt and leaves the previous reading in place: over so short an
  // interval the counter may not have moved, and the quotient would be noise.
  std::optional<double> power_w() override {
    std::lock_guard<std::mutex> lock(mutex_);
    const double now_ms = steady_now_ms();
    if (now_ms - last_power_ms_ < kResolutionMs) return std::nullopt;
    const auto joules = read_joules();
    if (!joules) return std::nullopt;
    const double watts = (*joules - last_power_j_) / ((now_ms - last_power_ms_) / 1000);
    last_power_ms_ = now_ms;
    last_power_j_ = *joules;
    return watts;
  }

  double resolution_ms() const override { return kResolutionMs; }

  // Half the time the smallest counter range lasts at kMaxPackagePowerW: about 2 minutes for the
  // usual 262 kJ range, so reading it between steps costs nothing measurable.
  double read_every_ms() const override {
    uint64_t smallest_uj = packages_.front().max_range_uj;
    for (const auto& p : packages_) smallest_uj = std::min(smallest_uj, p.max_range_uj);
    return static_cast<double>(smallest_uj) / 1e6 / kMaxPackagePowerW * 1000 / 2;
  }

  Telemetry telemetry() override {
    Telemetry t;
    t.power_w = power_w();
    return t;
  }

  nlohmann::json info() override {
    nlohmann::json packages = nlohmann::json::array();
    for (const auto& p : packages_)
      packages.push_back({{"zone", p.zone}, {"name", p.name}, {"max_energy_range_uj", p.max_range_uj}});
    return {{"method", method()}, {"energy_counter", true}, {"packages", packages}};
  }

 private:
  // Sums the packages' counters; the caller holds mutex_. nullopt when a counter cannot be read.
  std::optional<double> read_joules() {
    uint64_t total_uj = 0;
    for (auto& p : packages_) {
      uint64_t raw = 0;
      std::string error;
      int error_number = 0;
      if (!read_number(p.energy_path, raw, error, error_number)) return std::nullopt;
      // The counter climbs from 0 to max_energy_range_uj and starts again at 0, so a reading below
      // the previous one has passed the top: (max - previous) to reach it, 1 to roll over to 0, then
      // raw. This is off by under one hardware energy unit (~15-61 uJ) per wrap, and assumes at most
      // one wrap between reads, which at a few hundred watts is a quarter of an hour or more apart.
      if (raw >= p.last_uj)
        p.total_uj += raw - p.last_uj;
      else if (p.max_range_uj >= p.last_uj)
        p.total_uj += p.max_range_uj - p.last_uj + 1 + raw;
      p.last_uj = raw;
      total_uj += p.total_uj;
    }
    return static_cast<double>(total_uj) / 1e6;
  }

  std::mutex mutex_;
  std::vector<Package> packages_;
  double last_power_ms_;
  double last_power_j_ = 0;
};

}  // namespace

std::unique_ptr<PowerSource> open_rapl_source(std::string& reason, const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<Package> packages;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    Package p;
    p.zone = it->path().filename().string();
    p.index = top_level_zone_index(p.zone);
    if (p.index < 0) continue;
    // psys (the whole platform, on some laptops) is also a top-level zone; only packages are counted.
    p.name = first_line((it->path() / "name").string());
    if (p.name.rfind("package", 0) != 0) continue;
    p.energy_path = (it->path() / "energy_uj").string();
    packages.push_back(std::move(p));
  }
  if (packages.empty()) {
    reason = root + " has no RAPL package zones (no " + (fs::path(root) / "intel-rapl:N").string() +
             "); CPU energy is not measured.";
    return nullptr;
  }
  std::sort(packages.begin(), packages.end(),
            [](const Package& a, const Package& b) { return a.index < b.index; });

  for (auto& p : packages) {
    std::string error;
    int error_number = 0;
    const std::string range_path = (fs::path(root) / p.zone / "max_energy_range_uj").string();
    if (!read_number(range_path, p.max_range_uj, error, error_number)) {
      reason = "Cannot read " + range_path + " (" + error +
               "), without which the counter's wrap-arounds cannot be undone; CPU energy is not measured.";
      return nullptr;
    }
    if (!read_number(p.energy_path, p.last_uj, error, error_number)) {
      const bool denied = error_number == EACCES || error_number == EPERM;
      reason = "Cannot read " + p.energy_path + " (" + error + ")" +
               (denied ? ", which most current kernels let only root read" : "") +
               "; CPU energy is not measured.";
      return nullptr;
    }
  }
  return std::make_unique<RaplSource>(std::move(packages));
}

}  // namespace batchscope::power
