#include "lib/device/cpu_threads.h"

#include <ATen/Parallel.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "lib/common/errors.h"
#include "lib/common/limits.h"

extern char** environ;

namespace batchscope::cpu_threads {
namespace {

std::optional<std::string> first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

std::optional<long long> whole_number(const std::optional<std::string>& text) {
  if (!text || text->empty()) return std::nullopt;
  char* end = nullptr;
  const long long value = std::strtoll(text->c_str(), &end, 10);
  if (*end != '\0' && *end != '\n' && *end != ' ') return std::nullopt;
  return value;
}

// The CPU quota of this process's cgroup v2 in CPUs ("200000 100000" in cpu.max is 2), or nullopt for
// "max" or where there is none to read.
std::optional<double> cgroup_quota_cpus(const std::filesystem::path& root) {
  std::string group = "/";
  std::ifstream cgroup(root / "proc/self/cgroup");
  for (std::string line; std::getline(cgroup, line);) {
    if (line.rfind("0::", 0) == 0) group = line.substr(3);
  }
  const auto cpu_max = first_line(root / "sys/fs/cgroup" / std::filesystem::path(group).relative_path() / "cpu.max");
  if (!cpu_max) return std::nullopt;
  std::istringstream fields(*cpu_max);
  std::string quota;
  double period = 0;
  if (!(fields >> quota >> period) || quota == "max" || period <= 0) return std::nullopt;
  const auto q = whole_number(quota);
  if (!q || *q <= 0) return std::nullopt;
  return static_cast<double>(*q) / period;
}

struct Choice {
  Source source = Source::PhysicalCores;
  std::string variable;
  int usable_cores = 0;
};

std::mutex choice_mutex;
std::optional<Choice> last_choice;

}  // namespace

int usable_physical_cores(const std::vector<int>& allowed, const CpuTopologyFiles& files) {
  const std::filesystem::path cpus = std::filesystem::path(files.root) / "sys/devices/system/cpu";
  std::set<std::pair<long long, long long>> cores;
  bool complete = true;
  for (int cpu : allowed) {
    const std::filesystem::path topology = cpus / ("cpu" + std::to_string(cpu)) / "topology";
    const auto package = whole_number(first_line(topology / "physical_package_id"));
    const auto core = whole_number(first_line(topology / "core_id"));
    if (!package || !core) {
      complete = false;
      break;
    }
    cores.insert({*package, *core});
  }
  int count = complete ? static_cast<int>(cores.size()) : static_cast<int>(allowed.size());
  if (const auto quota = cgroup_quota_cpus(files.root)) count = std::min(count, static_cast<int>(std::ceil(*quota)));
  return std::max(count, 1);
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  if (cpus.empty()) {
    for (long cpu = 0; cpu < sysconf(_SC_NPROCESSORS_ONLN); ++cpu) cpus.push_back(static_cast<int>(cpu));
  }
  return cpus;
}

void apply(std::optional<int> requested, const std::map<std::string, std::string>& environment) {
  Choice choice;
  choice.usable_cores = usable_physical_cores(allowed_cpus());
  if (requested) {
    choice.source = Source::Option;
    at::set_num_threads(*requested);
  } else {
    // LibTorch reads these itself, OMP_NUM_THREADS first, and libgomp sizes its pool by them: a user
    // who set one has chosen.
    for (const char* name : {"MKL_NUM_THREADS", "OMP_NUM_THREADS"}) {
      const auto found = environment.find(name);
      if (found != environment.end() && whole_number(found->second).value_or(0) > 0) {
        choice.source = Source::Environment;
        choice.variable = name;
      }
    }
    if (choice.source == Source::PhysicalCores) at::set_num_threads(choice.usable_cores);
  }
  std::lock_guard<std::mutex> lock(choice_mutex);
  last_choice = choice;
}

void check_environment(const std::map<std::string, std::string>& environment) {
  for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS"}) {
    const auto found = environment.find(name);
    if (found == environment.end() || found->second.empty()) continue;
    bool good = true;
    std::size_t start = 0;
    while (good) {
      const std::size_t comma = found->second.find(',', start);
      const std::string count =
          found->second.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const std::optional<long long> n = whole_number(count);
      good = n && *n >= 1 && *n <= limits::kMaxThreads;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (good) continue;
    throw UserError(
        located("environment", 0,
                std::string(name) + "=" + printable(found->second) + " is not a thread count from 1 to " +
                    std::to_string(limits::kMaxThreads),
                "set it to one (or, for OMP_NUM_THREADS, a comma-separated list of them), or unset it"));
  }
}

InEffect in_effect() {
  InEffect threads;
  threads.intra_op = at::get_num_threads();
  threads.inter_op = at::get_num_interop_threads();
  threads.environment = threading_environment();
  std::lock_guard<std::mutex> lock(choice_mutex);
  if (last_choice) {
    threads.source = last_choice->source;
    threads.variable = last_choice->variable;
    threads.usable_cores = last_choice->usable_cores;
  } else {
    // Nothing applied (a library user): LibTorch's own default, or what it read from the environment.
    threads.usable_cores = usable_physical_cores(allowed_cpus());
    threads.source = Source::Environment;
    threads.variable = threads.environment.count("OMP_NUM_THREADS") ? "OMP_NUM_THREADS" : "LibTorch's default";
  }
  return threads;
}

std::map<std::string, std::string> environment_variables(const std::function<bool(const std::string& name)>& wanted) {
  std::map<std::string, std::string> found;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos) continue;
    const std::string name = text.substr(0, equals);
    if (wanted(name)) found[name] = text.substr(equals + 1);
  }
  return found;
}

std::map<std::string, std::string> threading_environment() {
  return environment_variables([](const std::string& name) {
    for (const char* prefix : {"OMP_", "GOMP_", "MKL_", "OPENBLAS_", "KMP_"}) {
      if (name.rfind(prefix, 0) == 0) return true;
    }
    return false;
  });
}

const char* to_string(Source source) {
  switch (source) {
    case Source::Option:
      return "--threads";
    case Source::Environment:
      return "environment";
    case Source::PhysicalCores:
      return "physical cores";
  }
  return "?";
}

nlohmann::json to_json(const InEffect& threads) {
  nlohmann::json j = {{"intra_op", threads.intra_op},
                      {"inter_op", threads.inter_op},
                      {"from", threads.source == Source::Environment ? threads.variable : to_string(threads.source)},
                      {"usable_physical_cores", threads.usable_cores}};
  if (!threads.environment.empty()) j["environment"] = threads.environment;
  return j;
}

}  // namespace batchscope::cpu_threads
