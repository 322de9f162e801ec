#include <iostream>
#include <string>
#include <vector>

#include <cxxopts.hpp>

#include "app/commands.h"
#include "lib/errors.h"

int main(int argc, char** argv) {
  using namespace batchscope;
  const std::vector<std::string> all(argv + 1, argv + argc);
  if (all.empty() || all[0] == "-h" || all[0] == "--help" || all[0] == "help") {
    std::cout << app::usage();
    return all.empty() ? 2 : 0;
  }
  if (all[0] == "--version") {
    std::cout << "batchscope " << BATCHSCOPE_VERSION << "\n";
    return 0;
  }
  const std::string command = all[0];
  const std::vector<std::string> args(all.begin() + 1, all.end());
  try {
    if (command == "sweep") return app::run_sweep_command(args);
    if (command == "models") return app::run_models_command(args);
    if (command == "env") return app::run_env_command(args);
    throw UserError(located("command line", 0, "unknown command '" + command + "'",
                            "use one of sweep, models, env (batchscope --help lists them)"));
  } catch (const UserError& error) {
    std::cerr << "batchscope: " << error.what() << "\n";
    return 2;
  } catch (const cxxopts::exceptions::exception& error) {
    std::cerr << "batchscope: command line: " << error.what() << "; see batchscope " << command << " --help.\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "batchscope: internal error: " << error.what() << "\n";
    return 1;
  }
}
