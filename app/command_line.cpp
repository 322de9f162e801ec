#include "app/command_line.h"

#include <cstdlib>
#include <sstream>

#include "lib/cpu_memory.h"
#include "lib/errors.h"

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

std::vector<int64_t> parse_input_shape(const std::string& text) {
  std::vector<int64_t> shape;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v <= 0) {
      throw UserError(located("command line", 0, "--input " + text + " is not a shape",
                              "give positive sizes separated by commas, e.g. --input 3,224,224"));
    }
    shape.push_back(v);
  }
  if (shape.empty()) {
    throw UserError(located("command line", 0, "--input is empty", "give a shape such as --input 3,224,224"));
  }
  return shape;
}

int64_t parse_memory_limit(const std::string& text) {
  try {
    return parse_memory_size(text);
  } catch (const std::invalid_argument& error) {
    // The parser's sentence already says what a size looks like.
    throw UserError(located("command line", 0, std::string("--memory-limit ") + error.what(), ""));
  }
}

}  // namespace batchscope::app
