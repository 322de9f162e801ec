#include "lib/analysis/memory_fit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "lib/analysis/robust_fit.h"
#include "lib/common/statistics.h"

namespace batchscope {
namespace {

// The peak of each size, ascending; sizes below 1 and peaks of nothing left out.
std::map<int64_t, int64_t> peaks_by_batch(const std::vector<std::pair<int64_t, int64_t>>& peaks) {
  std::map<int64_t, int64_t> out;
  for (const auto& [batch, bytes] : peaks) {
    if (batch >= 1 && bytes > 0) out[batch] = bytes;
  }
  return out;
}

double beyond_line(const MemoryFit& fit, int64_t from_batch, int64_t from_bytes, int64_t to_batch,
                   int64_t to_bytes) {
  return static_cast<double>(to_bytes - from_bytes) -
         fit.bytes_per_sample * static_cast<double>(to_batch - from_batch);
}

// The steps of the peak off the line of fit's slope between neighbouring sizes (at least two), and the
// threshold they passed.
void find_steps(MemoryFit& fit, const std::map<int64_t, int64_t>& peaks) {
  fit.steps.clear();
  std::vector<MemoryStep> pairs;
  std::vector<double> moves_per_size, bytes;
  for (auto it = peaks.begin(), next = std::next(it); next != peaks.end(); ++it, ++next) {
    const double move = beyond_line(fit, it->first, it->second, next->first, next->second);
    pairs.push_back({it->first, next->first, it->second, next->second, move});
    moves_per_size.push_back(std::fabs(move) / static_cast<double>(next->first - it->first));
  }
  for (const auto& [batch, peak] : peaks) bytes.push_back(static_cast<double>(peak));
  fit.step_scatter_bytes_per_size = 8 * median(moves_per_size);
  fit.step_floor_bytes = 0.01 * median(bytes);
  fit.step_threshold_bytes = step_threshold_for(fit, 1);
  for (const MemoryStep& s : pairs) {
    if (std::fabs(s.beyond_line_bytes) > step_threshold_for(fit, s.to_batch - s.from_batch))
      fit.steps.push_back(s);
  }
}

}  // namespace

double step_threshold_for(const MemoryFit& fit, int64_t gap) {
  return std::max(fit.step_scatter_bytes_per_size * static_cast<double>(std::max<int64_t>(gap, 1)),
                  fit.step_floor_bytes);
}

namespace {

std::optional<int64_t> largest_batch_on(double fixed_bytes, double bytes_per_sample, int64_t memory_bytes) {
  if (!(bytes_per_sample > 0)) return std::nullopt;
  const double room = static_cast<double>(memory_bytes) - fixed_bytes;
  // Beyond this no sweep measures anything, and a double would no longer hold the count exactly.
  constexpr double kMostBatches = 1e15;
  const double batches = std::min(std::floor(room / bytes_per_sample), kMostBatches);
  if (!(batches >= 1)) return std::nullopt;
  return static_cast<int64_t>(batches);
}

// The reach at memory_bytes, and whether the top line set it.
MemoryReach reach_at(const MemoryFit& fit, int64_t memory_bytes, std::string what, bool own) {
  MemoryReach r{memory_bytes, std::move(what), own,
                largest_batch_on(fit.fixed_bytes, fit.bytes_per_sample, memory_bytes)};
  if (fit.top_steeper && r.largest_batch) {
    const std::optional<int64_t> top =
        largest_batch_on(fit.top_fixed_bytes, fit.top_bytes_per_sample, memory_bytes);
    if (!top || *top < *r.largest_batch) {
      r.largest_batch = top;
      r.from_top = true;
    }
  }
  return r;
}

}  // namespace

std::optional<int64_t> largest_batch_within(const MemoryFit& fit, int64_t memory_bytes) {
  return reach_at(fit, memory_bytes, "", false).largest_batch;
}

std::optional<MemoryFit> fit_memory(const std::vector<std::pair<int64_t, int64_t>>& peaks,
                                    const std::optional<MemoryCapacity>& own, bool gpu) {
  const std::map<int64_t, int64_t> by_batch = peaks_by_batch(peaks);
  if (by_batch.size() < static_cast<size_t>(kMemoryFitMinPoints)) return std::nullopt;
  MemoryFit fit;
  fit.points = static_cast<int>(by_batch.size());
  fit.first_batch = by_batch.begin()->first;
  fit.last_batch = by_batch.rbegin()->first;
  // The growth per sample between neighbouring sizes, whose median a few steps cannot move (a line
  // through all the peaks would tilt towards a workspace that stays from some size on); the steps off it.
  std::vector<double> slopes;
  for (auto it = by_batch.begin(), next = std::next(it); next != by_batch.end(); ++it, ++next)
    slopes.push_back(static_cast<double>(next->second - it->second) /
                     static_cast<double>(next->first - it->first));
  fit.bytes_per_sample = median(slopes);
  find_steps(fit, by_batch);
  // The line through the sizes whose peaks sit at the level of the largest size's, the steps between
  // them summed (the workspaces that larger batches run with; an odd size's step up and back cancel),
  // where they are enough for one, else through all; Theil–Sen there, robust to an odd size.
  std::map<int64_t, double> offset;  // the steps' sum up to each size
  double sum = 0;
  auto step = fit.steps.begin();
  for (const auto& [batch, bytes] : by_batch) {
    while (step != fit.steps.end() && step->to_batch <= batch) sum += (step++)->beyond_line_bytes;
    offset[batch] = sum;
  }
  std::vector<double> xs, ys, all_xs, all_ys;
  for (const auto& [batch, bytes] : by_batch) {
    all_xs.push_back(static_cast<double>(batch));
    all_ys.push_back(static_cast<double>(bytes));
    if (std::fabs(offset[batch] - sum) <= fit.step_threshold_bytes) {
      xs.push_back(static_cast<double>(batch));
      ys.push_back(static_cast<double>(bytes));
    }
  }
  if (xs.size() < static_cast<size_t>(kMemoryFitMinPoints)) {
    xs = all_xs;
    ys = all_ys;
  }
  fit.line_batches.assign(xs.begin(), xs.end());
  const LineFit line = theil_sen(xs, ys);
  fit.fixed_bytes = line.intercept;
  fit.bytes_per_sample = line.slope;
  find_steps(fit, by_batch);  // again, beyond the line's own slope
  for (size_t i = 0; i < xs.size(); ++i) {
    const double deviation = std::fabs(ys[i] - (line.intercept + line.slope * xs[i])) / ys[i];
    if (deviation > fit.worst_deviation || fit.worst_at == 0) {
      fit.worst_deviation = deviation;
      fit.worst_at = static_cast<int64_t>(xs[i]);
    }
  }
  if (!(fit.bytes_per_sample > 0)) return fit;
  // The top line: the upper half of the line's sizes, at least kMemoryFitMinPoints of them.
  const size_t top_points = std::max<size_t>(kMemoryFitMinPoints, (xs.size() + 1) / 2);
  const std::vector<double> top_xs(xs.end() - static_cast<std::ptrdiff_t>(top_points), xs.end()),
      top_ys(ys.end() - static_cast<std::ptrdiff_t>(top_points), ys.end());
  const LineFit top = theil_sen(top_xs, top_ys);
  fit.top_fixed_bytes = top.intercept;
  fit.top_bytes_per_sample = top.slope;
  fit.top_first_batch = static_cast<int64_t>(top_xs.front());
  fit.top_steeper = top.slope > (1 + kSteeperTopShare) * fit.bytes_per_sample;
  if (own && own->bytes > 0) fit.reach.push_back(reach_at(fit, own->bytes, own->what, true));
  if (gpu) {
    for (const int64_t gib : kCommonGpuMemoryGiB) {
      const int64_t bytes = gib << 30;
      // A size within 5% of the device's own is that device again (an "80 GB" GPU holds 79.6 GiB).
      if (own && std::fabs(static_cast<double>(bytes - own->bytes)) < 0.05 * static_cast<double>(own->bytes))
        continue;
      fit.reach.push_back(reach_at(fit, bytes, std::to_string(gib) + " GiB", false));
    }
  }
  return fit;
}

void memory_at_changes(MemoryFit& fit, const std::vector<std::pair<int64_t, int64_t>>& peaks,
                       const std::vector<Jump>& jumps, const std::vector<Jump>& drops) {
  const std::map<int64_t, int64_t> by_batch = peaks_by_batch(peaks);
  fit.at_changes.clear();
  for (const std::vector<Jump>* changes : {&jumps, &drops}) {
    for (const Jump& j : *changes) {
      const auto from = by_batch.find(j.from_batch), to = by_batch.find(j.to_batch);
      if (from == by_batch.end() || to == by_batch.end()) continue;
      const double move = beyond_line(fit, from->first, from->second, to->first, to->second);
      fit.at_changes.push_back({j.from_batch, j.to_batch, changes == &drops, move,
                                std::fabs(move) > step_threshold_for(fit, j.to_batch - j.from_batch)});
    }
  }
}

}  // namespace batchscope
