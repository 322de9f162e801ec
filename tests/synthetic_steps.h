#pragma once

// Simulated sweeps for the jump detector's tests: step times drawn around a known curve with
// portable noise, so that what is found can be checked against what was put in.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/jump_detector.h"
#include "lib/common/statistics.h"

namespace batchscope::synthetic {

constexpr double kTwoPi = 6.283185307179586;

// Portable draws: std::normal_distribution differs between standard libraries, the engine does not.
class Draws {
 public:
  explicit Draws(uint64_t seed) : engine_(seed) {}
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u = 1.0 - uniform();  // (0, 1], so the log is finite
    const double v = uniform();
    const double r = std::sqrt(-2.0 * std::log(u));
    spare_ = r * std::sin(kTwoPi * v);
    has_spare_ = true;
    return r * std::cos(kTwoPi * v);
  }

 private:
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0;
};

struct Noise {
  std::string name;
  double cv = 0;            // of a single step
  bool heavy_tail = false;  // about 5% of the steps 1.5-3x slower
};

inline const std::vector<Noise>& noise_levels() {
  static const std::vector<Noise> levels = {{"0.5%", 0.005, false},    {"2%", 0.02, false},
                                            {"5%", 0.05, false},       {"0.5% + tail", 0.005, true},
                                            {"2% + tail", 0.02, true}, {"5% + tail", 0.05, true}};
  return levels;
}

constexpr int kSteps = 20;

// Standard error of the median of kSteps steps relative to the step time, measured by simulation:
// heavy tails make it larger than the normal-theory 1.2533 cv / sqrt(n).
inline double median_relative_se(const Noise& noise) {
  Draws draws(99);
  std::vector<double> medians;
  for (int r = 0; r < 4000; ++r) {
    std::vector<double> steps(kSteps);
    for (double& t : steps) {
      t = 1 + noise.cv * draws.normal();
      if (noise.heavy_tail && draws.uniform() < 0.05) t *= 1.5 + 1.5 * draws.uniform();
    }
    medians.push_back(median(steps));
  }
  return *stddev(medians);
}

using Truth = std::function<double(double)>;

inline std::vector<int64_t> sizes(int64_t first, int64_t last, int64_t step = 1) {
  std::vector<int64_t> out;
  for (int64_t b = first; b <= last; b += step) out.push_back(b);
  return out;
}

// kSteps timed steps per batch size around the true time, reduced as the analysis reduces them.
inline std::vector<LevelPoint> measure(const Truth& truth, const std::vector<int64_t>& batches,
                                       const Noise& noise, uint64_t seed) {
  Draws draws(seed);
  std::vector<LevelPoint> points;
  for (int64_t b : batches) {
    std::vector<double> steps(kSteps);
    for (double& t : steps) {
      t = truth(static_cast<double>(b)) * (1 + noise.cv * draws.normal());
      if (noise.heavy_tail && draws.uniform() < 0.05) t *= 1.5 + 1.5 * draws.uniform();
    }
    points.push_back({b, median(steps), median_standard_error(steps)});
  }
  return points;
}

inline std::vector<LevelPoint> exact(const Truth& truth, const std::vector<int64_t>& batches) {
  std::vector<LevelPoint> points;
  for (int64_t b : batches) points.push_back({b, truth(static_cast<double>(b)), 0.0});
  return points;
}

// A line with steps: past each position the time rises by `fraction` of the time just before it.
inline Truth staircase(double base, double slope, std::vector<int64_t> positions, double fraction) {
  return [=](double b) {
    double added = 0;
    for (int64_t c : positions) {
      if (b > static_cast<double>(c)) added += fraction * (base + slope * static_cast<double>(c) + added);
    }
    return base + slope * b + added;
  };
}

// The measured neighbours (from, to) between which each true step shows.
inline std::vector<std::pair<int64_t, int64_t>> expected_pairs(const std::vector<int64_t>& batches,
                                                               const std::vector<int64_t>& positions) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t c : positions) {
    for (size_t i = 0; i + 1 < batches.size(); ++i) {
      if (batches[i] <= c && c < batches[i + 1]) out.emplace_back(batches[i], batches[i + 1]);
    }
  }
  return out;
}

inline bool has_jump(const JumpAnalysis& a, int64_t from, int64_t to) {
  for (const Jump& j : a.jumps) {
    if (j.from_batch == from && j.to_batch == to) return true;
  }
  return false;
}

inline std::vector<int64_t> from_batches(const std::vector<Jump>& jumps) {
  std::vector<int64_t> out;
  for (const Jump& j : jumps) out.push_back(j.from_batch);
  return out;
}

inline std::string percent(double fraction) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "%5.1f%%", 100 * fraction);
  return buffer;
}

}  // namespace batchscope::synthetic
