#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchscope {

// Parses "70" (a single size), "1:70" (inclusive range), "1:64:8" (range with a step) and
// "1,8,32" (a list). Throws std::invalid_argument with a sentence that says what is wrong and
// what is accepted; the caller adds the file and line.
std::vector<int64_t> parse_batch_spec(const std::string& text);

// An inclusive range from..to in steps of step; throws std::invalid_argument when empty or inverted.
std::vector<int64_t> batch_range(int64_t from, int64_t to, int64_t step);

}  // namespace batchscope
