// The jump detector's rates on synthetic sweeps, as tables: false positives on smooth trends, and steps
// of known height found at their positions (with the runs periodic with k = 16 where steps are every 16),
// per noise level. The unit tests assert the same numbers (tests/jump_rate_study.h); this prints them.
// usage: build/bench_jump_rates

#include <cstdio>
#include <iterator>
#include <vector>

#include "tests/jump_rate_study.h"

using namespace batchscope::synthetic;

int main() {
  std::printf(
      "False positives: runs (of %d per cell) reporting any jump, drop, spike or fast size\nnoise        ",
      kFalsePositiveRuns);
  for (const Shape& s : smooth_shapes()) std::printf("%13s", s.name.c_str());
  std::printf("          all\n");
  const auto counts = false_positive_counts();
  for (size_t n = 0; n < noise_levels().size(); ++n) {
    std::printf("%-13s", noise_levels()[n].name.c_str());
    int total = 0;
    for (int any : counts[n]) {
      std::printf("%13s", percent(static_cast<double>(any) / kFalsePositiveRuns).c_str());
      total += any;
    }
    std::printf("%13s\n", percent(static_cast<double>(total) / (kFalsePositiveRuns * counts[n].size())).c_str());
  }

  // pooled[noise][height] over all scenarios; clear[noise]: cells at kClearRatio or more.
  std::vector<std::vector<Tally>> pooled(noise_levels().size(), std::vector<Tally>(std::size(kHeights)));
  std::vector<Tally> clear(noise_levels().size());
  const Scenario* shown = nullptr;
  for (const DetectionCell& c : detection_study()) {
    const bool every16 = c.scenario->positions[0] == 16;
    if (c.scenario != shown) {
      shown = c.scenario;
      std::printf("\nSteps %s: found at the right from/to, runs with a wrong finding%s; (step / SE of its "
                  "difference)",
                  c.scenario->name.c_str(), every16 ? ", runs periodic with k = 16" : "");
    }
    if (c.height == 0) std::printf("\n  %-12s", noise_levels()[c.noise].name.c_str());
    std::printf(" %2.0f%%:%s%s", 100 * kHeights[c.height], percent(c.tally.found_rate()).c_str(),
                percent(c.tally.wrong_rate()).c_str());
    if (every16) std::printf("%s", percent(static_cast<double>(c.tally.period16) / c.tally.runs).c_str());
    std::printf(" (%3.0f)", c.ratio);
    pooled[c.noise][c.height].add(c.tally);
    if (c.ratio >= kClearRatio) clear[c.noise].add(c.tally);
  }
  std::printf("\n\nAll step scenarios pooled: steps found (runs with a wrong finding) per height\n");
  for (size_t n = 0; n < noise_levels().size(); ++n) {
    std::printf("  %-12s median SE %5.2f%%", noise_levels()[n].name.c_str(),
                100 * median_relative_se(noise_levels()[n]));
    for (size_t h = 0; h < std::size(kHeights); ++h) {
      std::printf("  %2.0f%%:%s (%s)", 100 * kHeights[h], percent(pooled[n][h].found_rate()).c_str(),
                  percent(pooled[n][h].wrong_rate()).c_str());
    }
    std::printf("  clear (>= %.0f SE):%s\n", kClearRatio, percent(clear[n].found_rate()).c_str());
  }
  return 0;
}
