#include "lib/sweep/time_spent.h"

#include <algorithm>
#include <cstdio>
#include <vector>

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

std::string describe_time_spent(const SweepTimeSpent& spent) {
  std::vector<std::pair<std::string, double>> parts = spent.parts;
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (const auto& [part, seconds] : parts) {
    const double share = spent.total_s > 0 ? 100.0 * seconds / spent.total_s : 0.0;
    if (share < 0.5) continue;
    std::string words = part;
    std::replace(words.begin(), words.end(), '_', ' ');
    char line[96];
    std::snprintf(line, sizeof line, "%s%.0f%% %s", text.empty() ? "" : ", ", share, words.c_str());
    text += line;
  }
  char total[48];
  std::snprintf(total, sizeof total, " of %.1f s", spent.total_s);
  return text + total;
}

}  // namespace batchscope
