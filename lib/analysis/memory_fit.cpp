#include "lib/analysis/memory_fit.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "lib/analysis/robust_fit.h"

namespace batchscope {

std::optional<int64_t> largest_batch_within(const MemoryFit& fit, int64_t memory_bytes) {
  if (!(fit.bytes_per_sample > 0)) return std::nullopt;
  const double room = static_cast<double>(memory_bytes) - fit.fixed_bytes;
  // Beyond this no sweep measures anything, and a double would no longer hold the count exactly.
  constexpr double kMostBatches = 1e15;
  const double batches = std::min(std::floor(room / fit.bytes_per_sample), kMostBatches);
  if (!(batches >= 1)) return std::nullopt;
  return static_cast<int64_t>(batches);
}

std::optional<MemoryFit> fit_memory(const std::vector<std::pair<int64_t, int64_t>>& peaks,
                                    const std::optional<MemoryCapacity>& own, bool gpu) {
  std::set<int64_t> sizes;
  std::vector<double> xs, ys;
  for (const auto& [batch, bytes] : peaks) {
    if (batch < 1 || bytes <= 0) continue;
    sizes.insert(batch);
    xs.push_back(static_cast<double>(batch));
    ys.push_back(static_cast<double>(bytes));
  }
  if (sizes.size() < static_cast<size_t>(kMemoryFitMinPoints)) return std::nullopt;
  const LineFit line = theil_sen(xs, ys);
  MemoryFit fit;
  fit.fixed_bytes = line.intercept;
  fit.bytes_per_sample = line.slope;
  fit.points = static_cast<int>(xs.size());
  fit.first_batch = *sizes.begin();
  fit.last_batch = *sizes.rbegin();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double deviation = std::fabs(ys[i] - (line.intercept + line.slope * xs[i])) / ys[i];
    if (deviation > fit.worst_deviation || fit.worst_at == 0) {
      fit.worst_deviation = deviation;
      fit.worst_at = static_cast<int64_t>(xs[i]);
    }
  }
  if (!(fit.bytes_per_sample > 0)) return fit;
  if (own && own->bytes > 0)
    fit.reach.push_back({own->bytes, own->what, true, largest_batch_within(fit, own->bytes)});
  if (gpu) {
    for (const int64_t gib : kCommonGpuMemoryGiB) {
      const int64_t bytes = gib << 30;
      // A size within 5% of the device's own is that device again (an "80 GB" GPU holds 79.6 GiB).
      if (own && std::fabs(static_cast<double>(bytes - own->bytes)) < 0.05 * static_cast<double>(own->bytes))
        continue;
      fit.reach.push_back({bytes, std::to_string(gib) + " GiB", false, largest_batch_within(fit, bytes)});
    }
  }
  return fit;
}

}  // namespace batchscope
