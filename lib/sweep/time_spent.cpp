#include "lib/sweep/time_spent.h"

#include <algorithm>

namespace batchscope {

SweepTimeSpent TimeSpent::so_far() const {
  SweepTimeSpent spent;
  spent.total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double accounted = 0;
  for (const char* part : kSweepParts) {
    if (std::string(part) == "other") continue;
    const auto found = seconds_.find(part);
    const double seconds = found == seconds_.end() ? 0.0 : found->second;
    spent.parts.emplace_back(part, seconds);
    accounted += seconds;
  }
  spent.parts.emplace_back("other", std::max(0.0, spent.total_s - accounted));
  return spent;
}

}  // namespace batchscope
