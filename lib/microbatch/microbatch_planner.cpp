#include "lib/microbatch/microbatch_planner.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "lib/common/words.h"

namespace batchscope {
namespace {

// Sums of measured times that differ only by rounding count as equal, so the tie rule can apply.
bool nearly_equal(double a, double b) {
  return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
}

std::string join(const std::vector<int64_t>& sizes) {
  return sizes.empty() ? "none" : joined_numbers(sizes, ", ");
}

}  // namespace

std::string to_string(MicroBatchPolicy policy) {
  switch (policy) {
    case MicroBatchPolicy::Undivided:
      return "undivided";
    case MicroBatchPolicy::PowerOfTwo:
      return "powerOfTwo";
    case MicroBatchPolicy::All:
      return "all";
  }
  throw std::logic_error("unknown micro-batch policy");
}

std::optional<MicroBatchPolicy> policy_from_string(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "undivided") return MicroBatchPolicy::Undivided;
  if (lower == "poweroftwo" || lower == "power_of_two") return MicroBatchPolicy::PowerOfTwo;
  if (lower == "all") return MicroBatchPolicy::All;
  return std::nullopt;
}

std::vector<int64_t> candidate_sizes(MicroBatchPolicy policy, int64_t batch) {
  if (batch < 1) {
    throw std::invalid_argument("a mini-batch to split must hold 1 sample or more, not " +
                                std::to_string(batch));
  }
  std::vector<int64_t> sizes;
  switch (policy) {
    case MicroBatchPolicy::Undivided:
      break;
    case MicroBatchPolicy::PowerOfTwo:
      for (int64_t p = 1; p < batch; p *= 2) {
        sizes.push_back(p);
        if (p > batch / 2) break;  // the next doubling would pass batch (and could overflow)
      }
      break;
    case MicroBatchPolicy::All:
      for (int64_t s = 1; s < batch; ++s) sizes.push_back(s);
      break;
  }
  sizes.push_back(batch);
  return sizes;
}

SplitPlan plan_split(const CostTable& costs, int64_t batch, MicroBatchPolicy policy) {
  // Only sizes the policy allows and the table has a time for take part; other entries are ignored.
  std::vector<int64_t> usable;
  std::vector<double> usable_ms;
  for (const int64_t s : candidate_sizes(policy, batch)) {
    const auto it = costs.ms.find(s);
    if (it == costs.ms.end()) continue;
    // Measured times: one that is not is a fault, never the user's mistake.
    TORCH_CHECK(std::isfinite(it->second) && it->second >= 0, "layer '", costs.name, "' has time ",
                it->second, " ms at micro-batch ", s, "; times must be finite and not negative");
    usable.push_back(s);
    usable_ms.push_back(it->second);
  }

  // total[b]: least summed time for b samples; count[b]: micro-batches it takes; last[b]: the size
  // that ends it (0 where b cannot be reached).
  const auto n = static_cast<size_t>(batch) + 1;
  std::vector<double> total(n, std::numeric_limits<double>::infinity());
  std::vector<int64_t> count(n, 0);
  std::vector<int64_t> last(n, 0);
  total[0] = 0;
  for (size_t b = 1; b < n; ++b) {
    // Largest sizes first, so among equal times and equal counts the larger micro-batches win.
    for (size_t i = usable.size(); i-- > 0;) {
      const auto s = static_cast<size_t>(usable[i]);
      if (s > b || (s < b && last[b - s] == 0)) continue;  // b - s samples cannot be split
      const double candidate = total[b - s] + usable_ms[i];
      const int64_t pieces = count[b - s] + 1;
      const bool better =
          last[b] == 0 || (nearly_equal(candidate, total[b]) ? pieces < count[b] : candidate < total[b]);
      if (better) {
        total[b] = candidate;
        count[b] = pieces;
        last[b] = usable[i];
      }
    }
  }

  if (last[batch] == 0) {
    throw std::invalid_argument("layer '" + costs.name + "' cannot split batch " + std::to_string(batch) +
                                " under policy " + to_string(policy) +
                                ": its measured sizes that the policy allows (" + join(usable) +
                                ") add up to no split; measure the missing sizes or choose another policy");
  }

  SplitPlan plan;
  plan.name = costs.name;
  for (int64_t b = batch; b > 0; b -= last[b]) plan.split.push_back(last[b]);
  std::sort(plan.split.begin(), plan.split.end(), std::greater<int64_t>());
  plan.predicted_ms = total[batch];
  const auto whole = costs.ms.find(batch);
  plan.undivided_ms = whole == costs.ms.end() ? 0 : whole->second;
  return plan;
}

}  // namespace batchscope
