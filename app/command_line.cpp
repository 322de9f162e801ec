#include "app/command_line.h"

namespace batchscope::app {

cxxopts::ParseResult parse_command_line(cxxopts::Options& options, const std::vector<std::string>& args) {
  std::vector<const char*> argv{options.program().c_str()};
  for (const std::string& a : args) argv.push_back(a.c_str());
#if CXXOPTS__VERSION_MAJOR >= 3
  return options.parse(static_cast<int>(argv.size()), argv.data());
#else
  // cxxopts 2 (Ubuntu 22.04 images) takes argc and argv by non-const reference.
  int argc = static_cast<int>(argv.size());
  char** mutable_argv = const_cast<char**>(argv.data());
  return options.parse(argc, mutable_argv);
#endif
}

}  // namespace batchscope::app
