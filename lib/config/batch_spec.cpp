#include "lib/config/batch_spec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

#include "lib/common/limits.h"

namespace batchscope {
namespace {

// A range that would allocate millions of sizes is a typo, not a sweep.
constexpr int64_t kMaxBatchSizes = 100000;

const char* const kAccepted =
    "give a size (70), a range FROM:TO (1:70), a range with a step FROM:TO:STEP (1:64:8), a growing "
    "range FROM:TO:xFACTOR (1:60000:x2), a range up to the largest size that fits (1:max) or a list "
    "(1,8,32)";

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

// The spec as it should appear in a message: quoted when it would otherwise be invisible.
std::string shown_spec(const std::string& text) {
  const std::string t = trim(text);
  return t.empty() || t != text ? "\"" + text + "\"" : text;
}

std::vector<std::string> split(const std::string& s, char separator) {
  std::vector<std::string> parts;
  std::string::size_type start = 0;
  while (true) {
    const auto end = s.find(separator, start);
    parts.push_back(trim(s.substr(start, end == std::string::npos ? std::string::npos : end - start)));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

int64_t parse_number(const std::string& token, const std::string& whole) {
  int64_t value = 0;
  const char* begin = token.data();
  const char* end = begin + token.size();
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec == std::errc::result_out_of_range && ptr == end) {
    throw std::invalid_argument(shown_spec(whole) +
                                " holds a number too large for a batch size; the largest accepted is " +
                                std::to_string(limits::kMaxBatchSize));
  }
  if (token.empty() || ec != std::errc() || ptr != end) {
    throw std::invalid_argument(shown_spec(whole) + " is not a batch spec; " + kAccepted);
  }
  return value;
}

void check_size(int64_t size, const std::string& whole) {
  if (size > limits::kMaxBatchSize) {
    throw std::invalid_argument(shown_spec(whole) + " asks for batch size " + std::to_string(size) +
                                "; the largest accepted is " + std::to_string(limits::kMaxBatchSize));
  }
  if (size >= 1) return;
  const std::string number = std::to_string(size);
  const std::string what = trim(whole) == number ? " is not" : " contains " + number + ", which is not";
  throw std::invalid_argument(shown_spec(whole) + what + " a batch size; give whole numbers of 1 or more");
}

std::vector<int64_t> checked_range(int64_t from, int64_t to, int64_t step, const std::string& whole) {
  check_size(from, whole);
  check_size(to, whole);
  if (step < 1) {
    throw std::invalid_argument(shown_spec(whole) + " has step " + std::to_string(step) +
                                "; give a STEP of 1 or more in FROM:TO:STEP");
  }
  if (from > to) {
    throw std::invalid_argument(shown_spec(whole) + " is an inverted range; give FROM:TO with FROM <= TO");
  }
  const int64_t count = (to - from) / step + 1;
  if (count > kMaxBatchSizes) {
    throw std::invalid_argument(shown_spec(whole) + " gives " + std::to_string(count) +
                                " batch sizes; at most " + std::to_string(kMaxBatchSizes) +
                                " are allowed, so use a larger STEP");
  }
  std::vector<int64_t> sizes;
  sizes.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) sizes.push_back(from + i * step);
  return sizes;
}

double parse_factor(const std::string& token, const std::string& whole) {
  // "x2", "x1.5": the part after the x, read without the locale.
  double factor = 0;
  const char* begin = token.data() + 1;
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(begin, end, factor);
  if (token.size() < 2 || ec != std::errc() || ptr != end) {
    throw std::invalid_argument(shown_spec(whole) + " is not a batch spec; " + kAccepted);
  }
  if (!(factor > 1.0)) {
    throw std::invalid_argument(shown_spec(whole) + " grows by " + token.substr(1) +
                                "; give a FACTOR above 1 in FROM:TO:xFACTOR, e.g. x2");
  }
  return factor;
}

}  // namespace

std::vector<int64_t> batch_geometric(int64_t from, int64_t to, double factor) {
  std::ostringstream factor_text;
  factor_text.precision(12);
  factor_text << factor;
  const std::string whole = std::to_string(from) + ":" + std::to_string(to) + ":x" + factor_text.str();
  check_size(from, whole);
  check_size(to, whole);
  if (from > to)
    throw std::invalid_argument(shown_spec(whole) + " is an inverted range; give FROM:TO with FROM <= TO");
  if (!(factor > 1.0)) throw std::invalid_argument(shown_spec(whole) + " needs a FACTOR above 1");
  // A factor just above 1 would take billions of multiplications to get from FROM to TO.
  const double growths = std::log(static_cast<double>(to) / static_cast<double>(from)) / std::log(factor);
  if (!(growths <= static_cast<double>(kMaxBatchSizes))) {
    throw std::invalid_argument(shown_spec(whole) + " grows from FROM to TO in more than " +
                                std::to_string(kMaxBatchSizes) +
                                " steps; give a FACTOR further above 1, or a range FROM:TO:STEP");
  }
  std::vector<int64_t> sizes;
  for (double x = static_cast<double>(from); x < static_cast<double>(to); x *= factor) {
    const auto size = static_cast<int64_t>(std::llround(x));
    if (size >= to) break;
    if (sizes.empty() || size > sizes.back()) sizes.push_back(size);
  }
  sizes.push_back(to);
  return sizes;
}

std::optional<BatchToMax> parse_batch_to_max(const std::string& text) {
  if (text.find(',') != std::string::npos) return std::nullopt;
  const std::vector<std::string> parts = split(text, ':');
  if (parts.size() < 2 || parts.size() > 3 || parts[1] != "max") return std::nullopt;
  BatchToMax plan;
  plan.from = parse_number(parts[0], text);
  check_size(plan.from, text);
  if (parts.size() == 3) {
    if (!parts[2].empty() && parts[2][0] == 'x') {
      plan.factor = parse_factor(parts[2], text);
    } else {
      plan.step = parse_number(parts[2], text);
      if (plan.step < 1) {
        throw std::invalid_argument(shown_spec(text) + " has step " + parts[2] +
                                    "; give a STEP of 1 or more");
      }
    }
  }
  return plan;
}

std::vector<int64_t> expand_to_max(const BatchToMax& plan, int64_t max) {
  if (max < plan.from) return {};
  if (plan.factor > 1.0) return batch_geometric(plan.from, max, plan.factor);
  // The largest size that fits ends the range even when the steps would pass it by.
  std::vector<int64_t> sizes = batch_range(plan.from, max, plan.step);
  if (sizes.back() != max) sizes.push_back(max);
  return sizes;
}

std::vector<int64_t> batch_range(int64_t from, int64_t to, int64_t step) {
  std::string whole = std::to_string(from) + ":" + std::to_string(to);
  if (step != 1) whole += ":" + std::to_string(step);
  return checked_range(from, to, step, whole);
}

std::vector<int64_t> parse_batch_spec(const std::string& text) {
  if (trim(text).empty())
    throw std::invalid_argument(shown_spec(text) + " is an empty batch spec; " + kAccepted);

  if (text.find(',') != std::string::npos) {
    std::vector<int64_t> sizes;
    std::set<int64_t> seen;
    for (const std::string& token : split(text, ',')) {
      const int64_t size = parse_number(token, text);
      check_size(size, text);
      if (!seen.insert(size).second) {
        throw std::invalid_argument(shown_spec(text) + " lists " + std::to_string(size) +
                                    " twice; give each batch size once");
      }
      sizes.push_back(size);
    }
    return sizes;
  }

  const std::vector<std::string> parts = split(text, ':');
  if (parts.size() > 3) throw std::invalid_argument(shown_spec(text) + " is not a batch spec; " + kAccepted);
  if (parts.size() >= 2 && parts[1] == "max") {
    throw std::invalid_argument(shown_spec(text) +
                                " ends at the largest size that fits, which is found when the "
                                "sweep starts; it is accepted as a sweep's batch only");
  }
  if (parts.size() == 3 && !parts[2].empty() && parts[2][0] == 'x') {
    return batch_geometric(parse_number(parts[0], text), parse_number(parts[1], text),
                           parse_factor(parts[2], text));
  }
  std::vector<int64_t> numbers;
  for (const std::string& part : parts) numbers.push_back(parse_number(part, text));
  if (numbers.size() == 1) {
    check_size(numbers[0], text);
    return numbers;
  }
  return checked_range(numbers[0], numbers[1], numbers.size() == 3 ? numbers[2] : 1, text);
}

}  // namespace batchscope
