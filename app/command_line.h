#pragma once

#include <cxxopts.hpp>
#include <string>
#include <vector>

namespace batchscope::app {

// Parses a command's arguments (those after its name) with either cxxopts 2 or 3.
cxxopts::ParseResult parse_command_line(cxxopts::Options& options, const std::vector<std::string>& args);

}  // namespace batchscope::app
