#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace batchscope {

// Parses "70" (a single size), "1:70" (inclusive range), "1:64:8" (range with a step),
// "1:60000:x2" (from 1 growing by a factor of 2, and 60000 itself) and "1,8,32" (a list). Throws
// std::invalid_argument with a sentence that says what is wrong and what is accepted; the caller adds the
// file and line.
std::vector<int64_t> parse_batch_spec(const std::string& text);

// An inclusive range from..to in steps of step; throws std::invalid_argument when empty or inverted.
std::vector<int64_t> batch_range(int64_t from, int64_t to, int64_t step);

// from, from * factor, from * factor^2, ... rounded to whole sizes without repeats, then to itself;
// factor must be above 1.
std::vector<int64_t> batch_geometric(int64_t from, int64_t to, double factor);

// A range whose upper end is the largest batch size that fits, found when the sweep starts: steps of
// `step`, or growing by `factor` when factor > 1.
struct BatchToMax {
  int64_t from = 1;
  int64_t step = 1;
  double factor = 0;
  bool operator==(const BatchToMax& o) const {
    return from == o.from && step == o.step && factor == o.factor;
  }
};

// "1:max", "1:max:8" or "1:max:x2"; nullopt when the text's upper end is not "max".
std::optional<BatchToMax> parse_batch_to_max(const std::string& text);

// The sizes of the plan once the largest size that fits is known.
std::vector<int64_t> expand_to_max(const BatchToMax& plan, int64_t max);

}  // namespace batchscope
