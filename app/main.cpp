#include <c10/util/Exception.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <torch/version.h>

#include <cxxopts.hpp>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "app/command_line.h"
#include "app/commands.h"
#include "lib/common/errors.h"
#include "lib/device/cpu_threads.h"
#include "lib/device/host_allocator.h"
#include "lib/timing/step_runner.h"
#include "models/registry.h"

int main(int argc, char** argv) {
  using namespace batchscope;
  std::vector<std::string> all(argv + 1, argv + argc);
  // batchscope help COMMAND: that command's --help.
  if (all.size() >= 2 && all[0] == "help") all = {all[1], "--help"};
  if (all.empty() || all[0] == "-h" || all[0] == "--help" || all[0] == "help") {
    std::cout << app::usage();
    return all.empty() ? 2 : 0;
  }
  if (all[0] == "--version" || all[0] == "-V") {
    std::cout << "batchscope " << BATCHSCOPE_VERSION << "\n";
    return 0;
  }
  // Events of a run (resuming, a batch size that does not fit) go to stderr beside the progress line.
  auto log = spdlog::stderr_logger_mt("batchscope");
  log->set_pattern("batchscope: %v");
  spdlog::set_default_logger(log);

  const std::string command = all[0];
  const std::vector<std::string> args(all.begin() + 1, all.end());
  try {
    // Before any command touches LibTorch: one thread per usable physical core unless the environment
    // or --threads says otherwise.
    const std::map<std::string, std::string> threading = batchscope::cpu_threads::threading_environment();
    batchscope::cpu_threads::check_environment(threading);
    batchscope::cpu_threads::apply(std::nullopt, threading);
    // And glibc's malloc thresholds fixed, so that a CPU step's large blocks are served the same way in
    // every run (lib/device/host_allocator.h), unless the environment decides.
    batchscope::host_allocator::apply();
    // And a LibTorch build known to end the process on a layer of the zoo worked around, before the run
    // record says which kernels ran (models/registry.h).
    batchscope::models::avoid_known_library_faults();
    for (const auto& [name, run] : app::commands()) {
      if (name == command) return run(args);
    }
    app::refuse_unknown_command(all);
  } catch (const UserError& error) {
    std::cerr << "batchscope: " << printable(error.what()) << "\n";
    return 2;
  } catch (const app::CommandLineError& error) {
    std::cerr << "batchscope: command line: " << printable(error.what()) << "; see batchscope "
              << printable(command) << " --help.\n";
    return 2;
  } catch (const c10::Error& error) {
    if (const auto missing = unsupported_operation(error)) {
      // An operation LibTorch has no kernel for in this precision on this device: the user's choice.
      std::cerr << "batchscope: LibTorch " << TORCH_VERSION << " cannot run this: " << printable(*missing)
                << "; use another precision (fp32 runs everywhere) or another device.\n";
      return 2;
    }
    // LibTorch's own message, without the C++ backtrace that follows it in what().
    std::cerr << "batchscope: internal error: " << printable(error.what_without_backtrace()) << "\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "batchscope: internal error: " << printable(error.what()) << "\n";
    return 1;
  }
}
