#include "app/command_line.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "lib/cpu_memory.h"
#include "lib/errors.h"

#include <torch/torch.h>

namespace batchscope::app {

namespace {

cxxopts::ParseResult parse_with_cxxopts(cxxopts::Options& options, const std::vector<std::string>& args) {
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

// The option that was given `value`, as "--name", from the arguments ("--name value", "--name=value",
// "-n value"); empty when none was.
std::string option_given(const std::vector<std::string>& args, const std::string& value) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') continue;
    const size_t equals = a.find('=');
    if (equals != std::string::npos && a.substr(equals + 1) == value) return a.substr(0, equals);
    if (equals == std::string::npos && i + 1 < args.size() && args[i + 1] == value) return a;
  }
  return "";
}

}  // namespace

cxxopts::ParseResult parse_command_line(cxxopts::Options& options, const std::vector<std::string>& args) {
  try {
    return parse_with_cxxopts(options, args);
  } catch (const CommandLineError& error) {
    // cxxopts says "Argument 'VALUE' failed to parse" without naming the option: find it.
    const std::string what = error.what();
    const size_t open = what.find("\u2018"), close = what.rfind("\u2019");
    if (what.find("failed to parse") == std::string::npos || open == std::string::npos || close <= open) throw;
    const std::string value = what.substr(open + 3, close - open - 3);
    const std::string option = option_given(args, value);
    if (option.empty()) throw;
    throw UserError(located("command line", 0,
                            option + ": '" + printable(value) + "' is not a value that option takes",
                            "see " + options.program() + " --help"));
  }
}

namespace {

[[noreturn]] void refuse_value(const std::string& name, const std::string& text, const std::string& should_be,
                               const std::string& example) {
  throw UserError(located("command line", 0, "--" + name + ": '" + printable(text) + "' is not " + should_be,
                          "give one, e.g. --" + name + " " + example));
}

std::string number_text(double v) {
  std::ostringstream out;
  out.precision(12);
  out << v;
  return out.str();
}

}  // namespace

int64_t whole_option(const cxxopts::ParseResult& result, const std::string& name, int64_t least, int64_t most) {
  const std::string text = result[name].as<std::string>();
  const std::string should_be =
      most == INT64_MAX ? "a whole number of " + std::to_string(least) + " or more"
                        : "a whole number from " + std::to_string(least) + " to " + std::to_string(most);
  const char* begin = text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < least || value > most)
    refuse_value(name, text, should_be, std::to_string(least));
  return value;
}

int64_t whole_option(const cxxopts::ParseResult& result, const std::string& name) {
  const std::string text = result[name].as<std::string>();
  const char* begin = text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
  if (error == std::errc::result_out_of_range)
    refuse_value(name, text, "a whole number this size (the largest is " + std::to_string(INT64_MAX) + ")", "1");
  if (error != std::errc() || end != text.data() + text.size()) refuse_value(name, text, "a whole number", "1");
  return value;
}

uint64_t seed_option(const cxxopts::ParseResult& result, const std::string& name) {
  const std::string text = result[name].as<std::string>();
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty())
    refuse_value(name, text, "a whole number from 0 to " + std::to_string(UINT64_MAX), "0");
  return value;
}

double real_option(const cxxopts::ParseResult& result, const std::string& name, double least, double most,
                   bool least_excluded) {
  const std::string text = result[name].as<std::string>();
  char* end = nullptr;
  const double value = text.empty() || std::isspace(static_cast<unsigned char>(text[0]))
                           ? std::nan("")
                           : std::strtod(text.c_str(), &end);
  const bool in_range = std::isfinite(value) && (least_excluded ? value > least : value >= least) && value <= most;
  if (end != text.c_str() + text.size() || !in_range) {
    refuse_value(name, text,
                 std::string("a number ") + (least_excluded ? "above " : "from ") + number_text(least) +
                     (least_excluded ? " up to " : " to ") + number_text(most),
                 least_excluded ? number_text(least + 1) : number_text(least));
  }
  return value;
}

void apply_threads_option(const cxxopts::ParseResult& result) {
  if (result.count("threads")) torch::set_num_threads(static_cast<int>(whole_option(result, "threads", 1, kMaxThreads)));
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
