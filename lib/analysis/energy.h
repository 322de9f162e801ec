#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/analysis.h"
#include "lib/records/records.h"

namespace batchscope {

// An energy window must span this many updates of the source to be trusted.
inline constexpr double kMinUpdatesPerWindow = 10;
// An SM clock below this share of its reference (the window's start, or the group's highest start)
// counts as throttling.
inline constexpr double kThrottleShare = 0.9;
// A window whose draw above idle is below this share of the idle draw is within what the idle baseline
// itself drifts (a device's idle power moves a few percent with its temperature): its samples/J above
// idle, a quotient of that small difference, can be any size, and it is not chosen the most efficient.
inline constexpr double kMinAboveIdleShare = 0.02;

// Marks the group's low-confidence windows and throttled batch sizes, and picks the most
// energy-efficient batch size with and without the idle draw. Leaves g.energy empty where no point
// carries energy. Expects the points' statistics (too_few_samples, samples/s) to be final.
void analyze_energy(GroupAnalysis& g);

// The samples/J of g over that of the baseline at each batch size both measured energy at, leaving out
// sizes whose window is low-confidence or that have too few steps on either side, with each side's most
// efficient size. Nullopt where no batch size is left. Expects analyze_energy to have run on both.
std::optional<EnergyRatioCurve> energy_ratio(const GroupAnalysis& baseline, const GroupAnalysis& g);

// "1–5, 8, 12–20": sizes of the group, with runs of three or more neighbouring measured sizes shown as
// first–last, so that a long sweep's list stays short.
std::string describe_sizes(const std::vector<int64_t>& sizes, const GroupAnalysis& g);

// What the user should hear about a group's energy: throttling and windows too short to trust.
std::vector<std::string> energy_warnings(const GroupAnalysis& g);

}  // namespace batchscope
