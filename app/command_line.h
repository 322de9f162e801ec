#pragma once

#include <cstdint>
#include <cxxopts.hpp>
#include <string>
#include <vector>

namespace batchscope::app {

// Parses a command's arguments (those after its name) with either cxxopts 2 or 3.
cxxopts::ParseResult parse_command_line(cxxopts::Options& options, const std::vector<std::string>& args);

// "3,224,224" as a shape; a UserError naming --input otherwise.
std::vector<int64_t> parse_input_shape(const std::string& text);

// A --memory-limit such as 8GiB as bytes; a UserError naming --memory-limit otherwise.
int64_t parse_memory_limit(const std::string& text);

}  // namespace batchscope::app
