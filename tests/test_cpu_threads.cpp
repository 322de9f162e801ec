#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <fstream>

#include "lib/device/cpu_threads.h"
#include "lib/device/environment.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace batchscope;

namespace {

// A machine's sysfs and cgroup files under a temporary root: logical CPU i on core cores[i].
class FakeMachine {
 public:
  explicit FakeMachine(const std::vector<int>& cores) {
    for (std::size_t cpu = 0; cpu < cores.size(); ++cpu) {
      const fs::path topology = dir_.path() / "sys/devices/system/cpu" / ("cpu" + std::to_string(cpu)) / "topology";
      fs::create_directories(topology);
      std::ofstream(topology / "physical_package_id") << "0\n";
      std::ofstream(topology / "core_id") << cores[cpu] << "\n";
    }
  }
  void cgroup(const std::string& group, const std::string& cpu_max) {
    fs::create_directories(dir_.path() / "proc/self");
    std::ofstream(dir_.path() / "proc/self/cgroup") << "0::" << group << "\n";
    fs::create_directories(dir_.path() / "sys/fs/cgroup" / fs::path(group).relative_path());
    std::ofstream(dir_.path() / "sys/fs/cgroup" / fs::path(group).relative_path() / "cpu.max") << cpu_max << "\n";
  }
  cpu_threads::CpuTopologyFiles files() const { return {dir_.path().string()}; }

 private:
  testing_support::TempDir dir_;
};

}  // namespace

// Two logical CPUs that are hardware threads of one core are one core; two cores are two.
TEST(CpuThreads, PhysicalCoresCountDistinctCoresAmongTheAllowedCpus) {
  const FakeMachine smt({0, 0, 1, 1});
  EXPECT_EQ(cpu_threads::usable_physical_cores({0, 1, 2, 3}, smt.files()), 2);
  EXPECT_EQ(cpu_threads::usable_physical_cores({0, 1}, smt.files()), 1);
  EXPECT_EQ(cpu_threads::usable_physical_cores({1, 2}, smt.files()), 2);
  const FakeMachine whole_cores({0, 1});
  EXPECT_EQ(cpu_threads::usable_physical_cores({0, 1}, whole_cores.files()), 2);
}

// A container's CPU quota caps the count (rounded up); "max" does not.
TEST(CpuThreads, TheCgroupQuotaCapsTheCores) {
  FakeMachine machine({0, 1, 2, 3, 4, 5, 6, 7});
  const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  machine.cgroup("/docker/abc", "150000 100000");
  EXPECT_EQ(cpu_threads::usable_physical_cores(all, machine.files()), 2);
  machine.cgroup("/docker/abc", "max 100000");
  EXPECT_EQ(cpu_threads::usable_physical_cores(all, machine.files()), 8);
  machine.cgroup("/", "50000 100000");
  EXPECT_EQ(cpu_threads::usable_physical_cores(all, machine.files()), 1);
}

// Without topology files every allowed CPU counts as a core.
TEST(CpuThreads, MissingTopologyCountsLogicalCpus) {
  const testing_support::TempDir empty;
  EXPECT_EQ(cpu_threads::usable_physical_cores({0, 1, 2}, {empty.path().string()}), 3);
}

// --threads wins; a set OMP_NUM_THREADS is left to LibTorch; otherwise the usable cores. The record
// says which.
TEST(CpuThreads, TheChoiceAndItsSourceAreRecorded) {
  const int before = at::get_num_threads();
  cpu_threads::apply(1, {});
  EXPECT_EQ(at::get_num_threads(), 1);
  EXPECT_EQ(cpu_threads::in_effect().source, cpu_threads::Source::Option);
  EXPECT_EQ(cpu_threads::to_json(cpu_threads::in_effect())["from"], "--threads");

  cpu_threads::apply(std::nullopt, {{"OMP_NUM_THREADS", "1"}});
  EXPECT_EQ(cpu_threads::in_effect().source, cpu_threads::Source::Environment);
  EXPECT_EQ(cpu_threads::to_json(cpu_threads::in_effect())["from"], "OMP_NUM_THREADS");

  cpu_threads::apply(std::nullopt, {{"OMP_NUM_THREADS", "not a number"}});
  EXPECT_EQ(cpu_threads::in_effect().source, cpu_threads::Source::PhysicalCores);
  EXPECT_EQ(at::get_num_threads(), cpu_threads::usable_physical_cores(cpu_threads::allowed_cpus()));
  EXPECT_EQ(cpu_threads::in_effect().usable_cores, at::get_num_threads());
  at::set_num_threads(before);
}

TEST(Environment, Tf32IsSetPerExperimentAndLibTorchsOwnSettingComesBack) {
  // LibTorch's own: cuDNN's fp32 convolutions may use TF32, cuBLAS's matrix products may not.
  const Tf32Settings defaults = libtorch_tf32_defaults();
  EXPECT_TRUE(defaults.cudnn_convolutions);
  EXPECT_FALSE(defaults.cublas_matmul);
  set_tf32(false);
  EXPECT_FALSE(current_tf32().cudnn_convolutions);
  EXPECT_FALSE(current_tf32().cublas_matmul);
  set_tf32(true);
  EXPECT_TRUE(current_tf32().cudnn_convolutions);
  EXPECT_TRUE(current_tf32().cublas_matmul);
  set_tf32(std::nullopt);
  EXPECT_EQ(current_tf32().cudnn_convolutions, defaults.cudnn_convolutions);
  EXPECT_EQ(current_tf32().cublas_matmul, defaults.cublas_matmul);
  // What LibTorch had before the first change, whatever was set since.
  set_tf32(false);
  EXPECT_TRUE(libtorch_tf32_defaults().cudnn_convolutions);
  set_tf32(std::nullopt);
}

TEST(Environment, TheRunRecordNamesTheAllocatorSettings) {
  const char* before = std::getenv("MALLOC_MMAP_THRESHOLD_");
  const std::string kept = before ? before : "";
  setenv("MALLOC_MMAP_THRESHOLD_", "33554432", 1);
  const nlohmann::json cpu = collect_environment()["cpu"];
  unsetenv("MALLOC_MMAP_THRESHOLD_");
  const nlohmann::json without = collect_environment()["cpu"];
  if (before) setenv("MALLOC_MMAP_THRESHOLD_", kept.c_str(), 1);
  ASSERT_TRUE(cpu.contains("allocator_environment")) << cpu.dump();
  EXPECT_EQ(cpu["allocator_environment"]["MALLOC_MMAP_THRESHOLD_"], "33554432");
  EXPECT_FALSE(without.value("allocator_environment", nlohmann::json::object()).contains("MALLOC_MMAP_THRESHOLD_"));
}
