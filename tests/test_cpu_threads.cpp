#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "lib/device/cpu_threads.h"
#include "lib/device/environment.h"
#include "lib/device/host_allocator.h"
#include "models/registry.h"
#include "models/torchscript_fusion.h"
#include "tests/test_support.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BATCHSCOPE_HAS_ASAN 1
#endif
#endif
#ifndef BATCHSCOPE_HAS_ASAN
#define BATCHSCOPE_HAS_ASAN 0
#endif

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

namespace {

// The environment collected with `name` set to `value`, then without it; the variable as it was after.
struct CollectedBothWays {
  nlohmann::json with, without;
};
CollectedBothWays collected_with_and_without(const char* name, const char* value) {
  const char* before = std::getenv(name);
  const std::string kept = before ? before : "";
  setenv(name, value, 1);
  CollectedBothWays both{collect_environment(), {}};
  unsetenv(name);
  both.without = collect_environment();
  if (before) setenv(name, kept.c_str(), 1);
  return both;
}

}  // namespace

TEST(Environment, TheRunRecordNamesTheAllocatorSettings) {
  const CollectedBothWays both = collected_with_and_without("MALLOC_MMAP_THRESHOLD_", "33554432");
  const nlohmann::json& cpu = both.with["cpu"];
  const nlohmann::json& without = both.without["cpu"];
  ASSERT_TRUE(cpu.contains("allocator_environment")) << cpu.dump();
  EXPECT_EQ(cpu["allocator_environment"]["MALLOC_MMAP_THRESHOLD_"], "33554432");
  EXPECT_FALSE(without.value("allocator_environment", nlohmann::json::object()).contains("MALLOC_MMAP_THRESHOLD_"));
}

// How much fits on a GPU depends on LibTorch's caching allocator: a run record says how the environment
// set it, and `env` prints it; a record without the variables has no such field.
TEST(Environment, TheRunRecordNamesTheCudaAllocatorSettings) {
  const auto [with, without] =
      collected_with_and_without("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True");
  ASSERT_TRUE(with.contains("cuda_allocator_environment")) << with.dump();
  EXPECT_EQ(with["cuda_allocator_environment"]["PYTORCH_CUDA_ALLOC_CONF"], "expandable_segments:True");
  EXPECT_NE(
      format_environment(with).find("cuda allocator: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"),
      std::string::npos)
      << format_environment(with);
  EXPECT_FALSE(without.value("cuda_allocator_environment", nlohmann::json::object())
                   .contains("PYTORCH_CUDA_ALLOC_CONF"));
}

// Which kernels cuDNN may run depends on its workspace cap: a run record says how the environment set it.
TEST(Environment, TheRunRecordNamesTheCudnnWorkspaceCap) {
  const auto [with, without] = collected_with_and_without("CUDNN_CONV_WSCAP_DBG", "64");
  ASSERT_TRUE(with.contains("cuda_library_environment")) << with.dump();
  EXPECT_EQ(with["cuda_library_environment"]["CUDNN_CONV_WSCAP_DBG"], "64");
  EXPECT_NE(format_environment(with).find("cuda libraries: CUDNN_CONV_WSCAP_DBG=64\n"), std::string::npos)
      << format_environment(with);
  EXPECT_FALSE(
      without.value("cuda_library_environment", nlohmann::json::object()).contains("CUDNN_CONV_WSCAP_DBG"));
}

TEST(Environment, OneDnnVersionIsReadFromLibTorchsBuildConfiguration) {
  EXPECT_EQ(onednn_version("  - Intel(R) MKL-DNN v2.6.3 (Git Hash N/A)\n  - OpenMP 201511"), "2.6.3");
  EXPECT_EQ(onednn_version("  - Intel(R) oneDNN v3.7.2 (Git Hash 5e92403)\n"), "3.7.2");
  EXPECT_EQ(onednn_version("  - Intel(R) MKL-DNN v3.7.2"), "3.7.2");
  EXPECT_EQ(onednn_version("  - OpenMP 201511 (a.k.a. OpenMP 4.5)\n  - NNPACK is enabled"), "");
  EXPECT_EQ(onednn_version("  - Intel(R) MKL-DNN v (no number)"), "");
}

TEST(Environment, TheRunRecordSaysWhetherCpuConvolutionsMayUseOneDnn) {
  // What this LibTorch links, and, once the known faults are worked around as every command does first,
  // whether it may be used: not for 3.7.2 (it ends the process in ResNet-50's backward), else yes.
  models::avoid_known_library_faults();
  const std::string version = onednn_version(at::show_config());
  const nlohmann::json cpu = collect_environment()["cpu"];
  if (version.empty()) {
    EXPECT_FALSE(cpu.contains("onednn")) << cpu.dump();
    return;
  }
  ASSERT_TRUE(cpu.contains("onednn")) << cpu.dump();
  EXPECT_EQ(cpu["onednn"]["version"], version);
  EXPECT_EQ(cpu["onednn"]["enabled"], version != "3.7.2") << cpu.dump();
  EXPECT_EQ(cpu["onednn"]["enabled"].get<bool>(), at::globalContext().userEnabledMkldnn());
  const std::string shown = format_environment(collect_environment());
  EXPECT_NE(shown.find("onednn:        " + version), std::string::npos) << shown;
}

TEST(Environment, TheRunRecordSaysThatTorchScriptsCpuGraphsRunOperatorByOperator) {
  // Every command first turns TorchScript's CPU fuser off, which a LibTorch built with LLVM has on (it
  // hangs compiling an MLP's backward); the run record and `batchscope env` say so.
  models::avoid_known_library_faults();
  EXPECT_FALSE(torch::jit::canFuseOnCPU());
  const nlohmann::json env = collect_environment();
  EXPECT_EQ(env["cpu"]["torchscript_fuser"], false) << env["cpu"].dump();
  const std::string shown = format_environment(env);
  EXPECT_NE(shown.find("torchscript:   CPU graphs run operator by operator\n"), std::string::npos) << shown;
}

namespace {

using host_allocator::Mode;

// mmap-served bytes now (glibc's own count of blocks it mapped for malloc).
std::size_t mapped_bytes() { return mallinfo2().hblkhd; }

// One block of `bytes`, touched so that the allocation cannot be left out, and how many more bytes
// glibc had mapped while it was held.
std::size_t mapped_for_a_block_of(std::size_t bytes) {
  const std::size_t before = mapped_bytes();
  char* volatile block = static_cast<char*>(std::malloc(bytes));
  block[0] = 1;
  block[bytes - 1] = 1;
  const std::size_t during = mapped_bytes();
  std::free(block);
  return during > before ? during - before : 0;
}

}  // namespace

TEST(HostAllocator, FixedUnlessTheEnvironmentDecidesOrAsksForGlibcsOwn) {
  EXPECT_EQ(host_allocator::choose({}).mode, Mode::Fixed);
  EXPECT_EQ(host_allocator::choose({{"BATCHSCOPE_MALLOC", "fixed"}}).mode, Mode::Fixed);
  EXPECT_EQ(host_allocator::choose({{"BATCHSCOPE_MALLOC", ""}}).mode, Mode::Fixed);
  const auto dynamic = host_allocator::choose({{"BATCHSCOPE_MALLOC", "dynamic"}, {"MALLOC_MMAP_THRESHOLD_", "1"}});
  EXPECT_EQ(dynamic.mode, Mode::Dynamic);
  EXPECT_EQ(dynamic.decided_by, "BATCHSCOPE_MALLOC");
  const auto trim = host_allocator::choose({{"MALLOC_TRIM_THRESHOLD_", "4294967296"}});
  EXPECT_EQ(trim.mode, Mode::Environment);
  EXPECT_EQ(trim.decided_by, "MALLOC_TRIM_THRESHOLD_");
  EXPECT_EQ(host_allocator::choose({{"LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}}).decided_by,
            "LD_PRELOAD");
  // A preloaded library that is not an allocator, and tunables of something else, leave it fixed.
  EXPECT_EQ(host_allocator::choose({{"LD_PRELOAD", "libstdbuf.so"}}).mode, Mode::Fixed);
  EXPECT_EQ(host_allocator::choose({{"GLIBC_TUNABLES", "glibc.rtld.nns=2"}}).mode, Mode::Fixed);
  EXPECT_EQ(host_allocator::choose({{"GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536"}}).mode,
            Mode::Environment);
  EXPECT_TRUE(testing_support::refuses_with([] { host_allocator::choose({{"BATCHSCOPE_MALLOC", "lots"}}); },
                                            {"environment: BATCHSCOPE_MALLOC='lots' is not fixed or dynamic",
                                             "unset it"}));
}

TEST(HostAllocator, TheRecordSaysWhichThresholds) {
  const nlohmann::json fixed = host_allocator::to_json({Mode::Fixed, ""});
  EXPECT_EQ(fixed["thresholds"], "fixed");
  EXPECT_EQ(fixed["mmap_threshold_bytes"], 32 << 20);
  EXPECT_EQ(fixed["trim_threshold_bytes"], 2147483647);
  EXPECT_EQ(host_allocator::to_json({Mode::Environment, "LD_PRELOAD"}),
            (nlohmann::json{{"thresholds", "environment"}, {"decided_by", "LD_PRELOAD"}}));
  EXPECT_EQ(host_allocator::to_json({Mode::Dynamic, ""}), (nlohmann::json{{"thresholds", "glibc dynamic"}}));
}

TEST(HostAllocator, FixedThresholdsServeBlocksUpTo32MiBFromTheHeap) {
  // This test process's own environment, without anything that would decide instead.
  std::map<std::string, std::string> kept;
  for (const char* name : {"BATCHSCOPE_MALLOC", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                           "MALLOC_MMAP_MAX_", "GLIBC_TUNABLES", "LD_PRELOAD"}) {
    if (const char* value = std::getenv(name)) kept[name] = value;
    unsetenv(name);
  }
  const host_allocator::InEffect applied = host_allocator::apply();
  const std::size_t fixed_16 = mapped_for_a_block_of(16 << 20);
  const std::size_t fixed_48 = mapped_for_a_block_of(48 << 20);
  for (const auto& [name, value] : kept) setenv(name.c_str(), value.c_str(), 1);
#if defined(__SANITIZE_ADDRESS__) || BATCHSCOPE_HAS_ASAN
  // AddressSanitizer's allocator stands in for glibc's and may refuse mallopt, which the record then says.
  EXPECT_TRUE(applied.mode == Mode::Fixed || (applied.mode == Mode::Dynamic && applied.decided_by == "mallopt"));
  EXPECT_EQ(host_allocator::in_effect().mode, applied.mode);
  (void)fixed_16;
  (void)fixed_48;
#else
  EXPECT_EQ(applied.mode, Mode::Fixed);
  EXPECT_EQ(host_allocator::in_effect().mode, Mode::Fixed);
  EXPECT_EQ(collect_environment()["cpu"]["malloc"]["thresholds"], "fixed");
  // glibc's starting threshold (128 KiB) would map a 16 MiB block; the fixed one serves it from the heap.
  EXPECT_EQ(fixed_16, 0u) << "a 16 MiB block was still mapped with the threshold at 32 MiB";
  EXPECT_GE(fixed_48, std::size_t{48} << 20) << "a 48 MiB block, above glibc's largest threshold, was not mapped";
#endif
}

TEST(HostAllocator, TheRecordListsTheVariablesThatDecide) {
  const char* before = std::getenv("BATCHSCOPE_MALLOC");
  const std::string kept = before ? before : "";
  setenv("BATCHSCOPE_MALLOC", "dynamic", 1);
  const nlohmann::json cpu = collect_environment()["cpu"];
  if (before) setenv("BATCHSCOPE_MALLOC", kept.c_str(), 1); else unsetenv("BATCHSCOPE_MALLOC");
  EXPECT_EQ(host_allocator::environment().count("BATCHSCOPE_MALLOC"), before ? 1u : 0u);
  ASSERT_TRUE(cpu.contains("allocator_environment")) << cpu.dump();
  EXPECT_EQ(cpu["allocator_environment"]["BATCHSCOPE_MALLOC"], "dynamic");
}
