#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

// How many CPU threads LibTorch computes with, and why.
//
// LibTorch 1.13 on x86-64, where OMP_NUM_THREADS and MKL_NUM_THREADS are unset, takes half of
// std::thread::hardware_concurrency(): it assumes every core runs two hardware threads. On a machine
// whose logical CPUs are whole cores (most cloud VMs' vCPUs as the guest sees them, and any machine with
// SMT off) that leaves half the cores idle: 1 thread on 2 cores. Later LibTorch versions count physical
// cores with cpuinfo, but neither looks at the process's CPU affinity or its container's CPU quota.
// batchscope's default is what both mean to do: one thread per physical core this process may run on.
namespace batchscope::cpu_threads {

// Where the intra-op thread count came from.
enum class Source { Option, Environment, PhysicalCores };

struct InEffect {
  int intra_op = 0;  // at::get_num_threads(), read when the record is made
  int inter_op = 0;  // at::get_num_interop_threads()
  Source source = Source::PhysicalCores;
  std::string variable;    // the environment variable that decided, for Source::Environment
  int usable_cores = 0;    // physical cores this process may run on
  std::map<std::string, std::string> environment;  // the threading variables that are set
};

// The machine as the kernel shows it, read from files below `root` ("/" normally): which logical CPUs
// the process may run on, the physical core of each, and the CPU quota of its cgroup.
struct CpuTopologyFiles {
  std::string root = "/";
};

// Physical cores among the logical CPUs in `allowed` (their distinct package and core ids in
// ROOT/sys/devices/system/cpu/cpuN/topology), capped by the cgroup v2 quota (cpu.max of the cgroup
// named in ROOT/proc/self/cgroup, rounded up). At least 1; where topology cannot be read, the allowed
// logical CPUs count as cores.
int usable_physical_cores(const std::vector<int>& allowed, const CpuTopologyFiles& files = {});

// The logical CPUs this process may run on (its affinity mask).
std::vector<int> allowed_cpus();

// Sets LibTorch's intra-op threads for the rest of the process: `requested` where given (--threads),
// else LibTorch's own reading of OMP_NUM_THREADS or MKL_NUM_THREADS where one is set in `environment`,
// else one per usable physical core. Remembers the choice for in_effect().
void apply(std::optional<int> requested, const std::map<std::string, std::string>& environment);

// Refuses (UserError, "environment: ...") a thread count in OMP_NUM_THREADS or MKL_NUM_THREADS that is no
// whole number from 1 to limits::kMaxThreads: libgomp ignores a bad one with a line of its own, and ends
// the process inside its first parallel region on a count far too large. OMP_NUM_THREADS may list one
// count per level of nested parallelism ("8,2"), each checked.
void check_environment(const std::map<std::string, std::string>& environment);

// The threads in effect now and where their count came from.
InEffect in_effect();

// The variables of this process's environment whose names `wanted` keeps, by name.
std::map<std::string, std::string> environment_variables(const std::function<bool(const std::string& name)>& wanted);
// The threading variables of this process's environment (OMP_*, GOMP_*, MKL_*, OPENBLAS_*,
// KMP_* ones that set counts or waiting), by name.
std::map<std::string, std::string> threading_environment();

const char* to_string(Source source);
nlohmann::json to_json(const InEffect& threads);

}  // namespace batchscope::cpu_threads
