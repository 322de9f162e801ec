#include "lib/analysis/jump_detector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "lib/analysis/robust_fit.h"
#include "lib/common/statistics.h"

namespace batchscope {
namespace {

// sqrt(pi / 2): the standard error of a normal sample's median over that of its mean.
constexpr double kMedianEfficiency = 1.2533;
// sqrt(pi / 2) again: a normal sigma from the mean absolute deviation.
constexpr double kMeanAbsDeviationToSigma = 1.2533;
// Noise-free data would give a zero noise; one part per million of the step time is below any timer.
constexpr double kNoiseFloorRelative = 1e-6;
// A side of the window with fewer pairs than this is too short to bound the trend by its median alone.
constexpr size_t kShortSide = 3;
// Pairs nearest an end that a second, local straight line is drawn through, to follow a bend there.
constexpr size_t kNearPairs = 5;
// Pairs whose excess is this many noise sigmas from the trend are left out of the next noise estimate
// even when they are not reported (too small a change, or the noise still inflated by other jumps).
constexpr double kClipSigmas = 3.0;
// Standard deviation of a normal sample cut at +-3 sigma, in sigmas.
constexpr double kClippedNormalSd = 0.9866;
constexpr int kMaxPasses = 10;
// The widest run of fast sizes: the sawtooths measured are one or two sizes wide; a longer faster stretch
// is a drop and a jump, with a segment between them.
constexpr size_t kMaxFastRun = 3;

// One pair of consecutive measured batch sizes.
struct Pair {
  double width = 0;       // batch sizes between the two points
  double difference = 0;  // change of the median step time
  double rate = 0;        // difference per extra sample
  double middle = 0;      // batch size half-way between the two points
  double level = 0;       // mean of the two medians
  double standard_error = 0;
};

// The local slope around a pair, from its neighbours but not from itself.
struct LocalTrend {
  double typical = 0;  // median rate of the pairs on both sides
  double highest = 0;  // the steepest slope either side supports: a rise must beat it
  double lowest = 0;   // the flattest: a drop must fall below it
};

enum class Kind { kNone, kRise, kDrop, kSpikeRise, kSpikeFall };

struct PairResult {
  Kind kind = Kind::kNone;
  double rise_excess = 0;  // over the highest local slope
  double drop_excess = 0;  // under the lowest local slope
  double sigma = 0;
};

struct Pass {
  std::vector<PairResult> pairs;
  std::vector<bool> found;     // any kind but kNone: kept out of the trends next pass
  std::vector<bool> outliers;  // found, or far off the trend: kept out of the noise next pass
  bool clipped = false;        // outliers holds the pairs beyond kClipSigmas
  double slope = 0;
  double relative_noise = 0;
};

void check_input(const std::vector<LevelPoint>& points, const JumpDetectorOptions& options) {
  if (options.window < 1) throw std::invalid_argument("detect_jumps needs a window of at least one pair");
  if (!(options.z_threshold > 0)) throw std::invalid_argument("detect_jumps needs a positive z_threshold");
  if (!(options.min_relative >= 0)) throw std::invalid_argument("detect_jumps needs min_relative >= 0");
  for (size_t i = 0; i < points.size(); ++i) {
    const LevelPoint& p = points[i];
    if (!std::isfinite(p.median_ms) || !std::isfinite(p.median_se_ms) || p.median_se_ms < 0) {
      throw std::invalid_argument("detect_jumps needs finite medians and standard errors >= 0");
    }
    if (i > 0 && points[i - 1].batch_size >= p.batch_size) {
      throw std::invalid_argument("detect_jumps needs points sorted by batch size without repeats");
    }
  }
}

std::vector<Pair> make_pairs(const std::vector<LevelPoint>& points) {
  std::vector<Pair> pairs(points.size() - 1);
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    const LevelPoint& a = points[i];
    const LevelPoint& b = points[i + 1];
    Pair& p = pairs[i];
    p.width = static_cast<double>(b.batch_size - a.batch_size);
    p.difference = b.median_ms - a.median_ms;
    p.rate = p.difference / p.width;
    p.middle = 0.5 * static_cast<double>(a.batch_size + b.batch_size);
    p.level = 0.5 * (a.median_ms + b.median_ms);
    p.standard_error = std::hypot(a.median_se_ms, b.median_se_ms);
  }
  return pairs;
}

// Rates expected at pair i from straight lines through the rates of one side (all of them, and the
// nearest kNearPairs), for the pairs at the ends of the range, where one side's median misses a bend.
void add_extrapolated_rates(const std::vector<Pair>& pairs, const std::vector<size_t>& side, size_t i,
                            std::vector<double>& candidates) {
  std::vector<double> x, y;
  for (size_t j : side) {
    x.push_back(pairs[j].middle);
    y.push_back(pairs[j].rate);
  }
  const LineFit whole = theil_sen(x, y);
  candidates.push_back(whole.intercept + whole.slope * pairs[i].middle);
  if (side.size() > kNearPairs) {
    // The nearest pairs are the first of a right side, the last of a left one.
    const size_t offset = side.front() > i ? 0 : side.size() - kNearPairs;
    const std::vector<double> near_x(x.begin() + offset, x.begin() + offset + kNearPairs);
    const std::vector<double> near_y(y.begin() + offset, y.begin() + offset + kNearPairs);
    const LineFit near = theil_sen(near_x, near_y);
    candidates.push_back(near.intercept + near.slope * pairs[i].middle);
  }
}

// Between two jumps the rates on both sides agree. A change of slope (the knee where a GPU fills up,
// a saturating curve) makes them differ, and bounding by the larger side keeps such bends from
// looking like jumps; a jump is a single pair above both sides.
LocalTrend local_trend(const std::vector<Pair>& pairs, const std::vector<bool>& found, size_t i, int window,
                       double fallback) {
  const size_t w = static_cast<size_t>(window);
  std::vector<size_t> left, right;
  for (size_t j = i > w ? i - w : 0; j < i; ++j) {
    if (!found[j]) left.push_back(j);
  }
  for (size_t j = i + 1; j < pairs.size() && j <= i + w; ++j) {
    if (!found[j]) right.push_back(j);
  }
  LocalTrend trend{fallback, fallback, fallback};
  std::vector<double> both, candidates;
  for (const std::vector<size_t>* side : {&left, &right}) {
    if (side->empty()) continue;
    std::vector<double> rates;
    for (size_t j : *side) rates.push_back(pairs[j].rate);
    both.insert(both.end(), rates.begin(), rates.end());
    candidates.push_back(median(rates));
  }
  if (both.empty()) return trend;
  if (left.size() < kShortSide && right.size() >= kShortSide) {
    add_extrapolated_rates(pairs, right, i, candidates);
  }
  if (right.size() < kShortSide && left.size() >= kShortSide) {
    add_extrapolated_rates(pairs, left, i, candidates);
  }
  trend.typical = median(both);
  trend.highest = *std::max_element(candidates.begin(), candidates.end());
  trend.lowest = *std::min_element(candidates.begin(), candidates.end());
  return trend;
}

// One detection pass. The pairs the previous pass found are left out of the slopes, its outliers out of
// the noise; clipping bends of the trend from the slopes too would hide them from their neighbours.
Pass detect_once(const std::vector<LevelPoint>& points, const std::vector<Pair>& pairs, const Pass& previous,
                 const JumpDetectorOptions& options) {
  const size_t n = pairs.size();
  Pass pass;
  std::vector<double> rates;
  for (size_t i = 0; i < n; ++i) {
    if (!previous.found[i]) rates.push_back(pairs[i].rate);
  }
  if (rates.empty()) {
    for (const Pair& p : pairs) rates.push_back(p.rate);
  }
  pass.slope = median(rates);

  std::vector<LocalTrend> trends(n);
  std::vector<double> relative_excess(n, 0.0), kept;
  for (size_t i = 0; i < n; ++i) {
    trends[i] = local_trend(pairs, previous.found, i, options.window, pass.slope);
    if (pairs[i].level > 0) {
      relative_excess[i] = (pairs[i].difference - trends[i].typical * pairs[i].width) / pairs[i].level;
    }
    if (!previous.outliers[i]) kept.push_back(relative_excess[i]);
  }
  if (kept.empty()) kept = relative_excess;
  // Timing noise grows with the step time, so the spread between batch sizes is taken relative to it.
  // The first pass needs the MAD to resist the jumps; once the pairs beyond 3 sigma are cut off, the
  // standard deviation of the rest is as robust and has less than half the MAD's sampling variance.
  const std::optional<double> sd = stddev(kept);
  const double spread = previous.clipped && sd ? *sd / kClippedNormalSd : robust_sigma(kept);
  pass.relative_noise = std::max(spread, kNoiseFloorRelative);

  pass.pairs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Pair& p = pairs[i];
    PairResult& r = pass.pairs[i];
    r.rise_excess = p.difference - trends[i].highest * p.width;
    r.drop_excess = p.difference - trends[i].lowest * p.width;
    // The standard errors see the noise within a batch size, the spread of the excesses the drift
    // between batch sizes as well; the larger of the two is the honest one.
    r.sigma = std::max(
        {p.standard_error, pass.relative_noise * std::fabs(p.level), std::numeric_limits<double>::min()});
    const double smallest = options.min_relative * std::fabs(points[i].median_ms);
    if (r.rise_excess >= options.z_threshold * r.sigma && r.rise_excess >= smallest) {
      r.kind = Kind::kRise;
    } else if (-r.drop_excess >= options.z_threshold * r.sigma && -r.drop_excess >= smallest) {
      r.kind = Kind::kDrop;
    }
  }
  // A rise and a fall straight back (by at least half, and clearly beyond the noise) is one slow
  // batch size, not a change of level.
  for (size_t i = 0; i + 1 < n; ++i) {
    PairResult& up = pass.pairs[i];
    PairResult& down = pass.pairs[i + 1];
    if (up.kind != Kind::kRise) continue;
    if (down.drop_excess <= -0.5 * up.rise_excess &&
        down.drop_excess <= -0.5 * options.z_threshold * down.sigma) {
      up.kind = Kind::kSpikeRise;
      down.kind = Kind::kSpikeFall;
    }
  }
  pass.found.resize(n);
  pass.outliers.resize(n);
  for (size_t i = 0; i < n; ++i) {
    pass.found[i] = pass.pairs[i].kind != Kind::kNone;
    pass.outliers[i] = pass.found[i] || std::fabs(relative_excess[i]) > kClipSigmas * pass.relative_noise;
  }
  pass.clipped = true;
  return pass;
}

Jump make_jump(const std::vector<LevelPoint>& points, size_t i, double excess, double sigma,
               double z_threshold) {
  Jump jump;
  jump.from_batch = points[i].batch_size;
  jump.to_batch = points[i + 1].batch_size;
  jump.from_ms = points[i].median_ms;
  jump.to_ms = points[i + 1].median_ms;
  jump.delta_ms = excess;
  jump.delta_pct = jump.from_ms != 0 ? 100.0 * excess / jump.from_ms : 0.0;
  jump.z = excess / sigma;
  jump.confidence = std::fabs(jump.z) >= 2 * z_threshold ? "high" : "medium";
  return jump;
}

Segment fit_segment(const std::vector<LevelPoint>& points, size_t first, size_t last,
                    const std::vector<bool>& is_spike) {
  Segment s;
  s.first_batch = points[first].batch_size;
  s.last_batch = points[last].batch_size;
  s.points = static_cast<int>(last - first + 1);
  std::vector<double> x, y;
  for (size_t i = first; i <= last; ++i) {
    if (is_spike[i]) continue;
    x.push_back(static_cast<double>(points[i].batch_size));
    y.push_back(points[i].median_ms);
  }
  if (x.size() >= 2) s.slope_ms_per_sample = least_squares(x, y).slope;
  s.rise_ms = s.slope_ms_per_sample * static_cast<double>(s.last_batch - s.first_batch);
  return s;
}

// Segments split at every jump and drop. Edge segments are left out of the staircase test: the first
// often holds the flat start of a GPU that is not yet full, the last ends wherever the sweep stopped.
void add_segments(const std::vector<LevelPoint>& points, const Pass& pass, double z_threshold,
                  JumpAnalysis& analysis) {
  std::vector<bool> is_spike(points.size(), false);
  std::vector<size_t> cuts;  // pair indices
  std::vector<double> cut_sizes;
  for (size_t i = 0; i < pass.pairs.size(); ++i) {
    const PairResult& r = pass.pairs[i];
    if (r.kind == Kind::kSpikeRise) is_spike[i + 1] = true;
    if (r.kind == Kind::kRise) cut_sizes.push_back(r.rise_excess);
    if (r.kind == Kind::kDrop) cut_sizes.push_back(-r.drop_excess);
    if (r.kind == Kind::kRise || r.kind == Kind::kDrop) cuts.push_back(i);
  }
  size_t first = 0;
  for (size_t c = 0; c <= cuts.size(); ++c) {
    const size_t last = c < cuts.size() ? cuts[c] : points.size() - 1;
    Segment s = fit_segment(points, first, last, is_spike);
    double level = 0;
    for (size_t i = first; i <= last; ++i) level += std::fabs(points[i].median_ms);
    level /= static_cast<double>(last - first + 1);
    const double noise_limit = z_threshold * pass.relative_noise * level;
    double adjacent = std::numeric_limits<double>::infinity();
    if (c > 0) adjacent = std::min(adjacent, cut_sizes[c - 1]);
    if (c < cuts.size()) adjacent = std::min(adjacent, cut_sizes[c]);
    s.plateau = std::fabs(s.rise_ms) < noise_limit || std::fabs(s.rise_ms) < 0.5 * adjacent;
    analysis.segments.push_back(s);
    first = last + 1;
  }
  analysis.staircase = analysis.jumps.size() >= 2;
  for (size_t c = 1; c + 1 < analysis.segments.size(); ++c) {
    if (!analysis.segments[c].plateau) analysis.staircase = false;
  }
}

// Runs of one to kMaxFastRun sizes faster than the sizes on both sides, left to right, the widest first
// (on a rising trend the first of two fast sizes is also faster than the second); a run's right
// neighbour cannot start the next one, being slower.
std::vector<FastSizes> find_fast_sizes(const std::vector<LevelPoint>& all, const std::vector<int64_t>& spikes,
                                       const JumpDetectorOptions& options) {
  std::vector<LevelPoint> points;
  for (const LevelPoint& p : all) {
    if (std::find(spikes.begin(), spikes.end(), p.batch_size) == spikes.end()) points.push_back(p);
  }
  std::vector<FastSizes> found;
  for (size_t i = 1; i + 1 < points.size();) {
    bool run = false;
    for (size_t width = kMaxFastRun; width >= 1 && !run; --width) {
      const size_t last = i + width - 1;
      if (last + 1 >= points.size()) continue;
      double fastest = points[i].median_ms, slowest = points[i].median_ms, inside_se = 0;
      for (size_t k = i; k <= last; ++k) {
        fastest = std::min(fastest, points[k].median_ms);
        slowest = std::max(slowest, points[k].median_ms);
        inside_se = std::max(inside_se, points[k].median_se_ms);
      }
      const LevelPoint& before = points[i - 1];
      const LevelPoint& after = points[last + 1];
      const double outside = std::min(before.median_ms, after.median_ms);
      const double gain = outside - slowest;
      const double sigma = std::hypot(inside_se, std::max(before.median_se_ms, after.median_se_ms));
      if (gain > 0 && gain >= options.z_threshold * sigma &&
          gain >= options.min_relative * std::fabs(outside)) {
        FastSizes f;
        f.first_batch = points[i].batch_size;
        f.last_batch = points[last].batch_size;
        f.fastest_ms = fastest;
        f.slowest_ms = slowest;
        f.before_batch = before.batch_size;
        f.after_batch = after.batch_size;
        f.before_ms = before.median_ms;
        f.after_ms = after.median_ms;
        f.gain_pct = outside != 0 ? 100 * gain / outside : 0;
        found.push_back(f);
        i = last + 2;
        run = true;
      }
    }
    if (!run) ++i;
  }
  return found;
}

}  // namespace

double median_standard_error(const std::vector<double>& times_ms) {
  if (times_ms.size() < 2) return 0.0;
  double sigma = robust_sigma(times_ms);
  if (sigma == 0) {
    // More than half the samples are equal (a coarse timer): fall back to the mean absolute deviation,
    // which still sees the rest without letting one slow step dominate as a standard deviation would.
    const double m = median(times_ms);
    double sum = 0;
    for (double t : times_ms) sum += std::fabs(t - m);
    sigma = kMeanAbsDeviationToSigma * sum / static_cast<double>(times_ms.size());
  }
  return kMedianEfficiency * sigma / std::sqrt(static_cast<double>(times_ms.size()));
}

JumpAnalysis detect_jumps(const std::vector<LevelPoint>& points, const JumpDetectorOptions& options) {
  check_input(points, options);
  JumpAnalysis analysis;
  if (points.size() < 3) {
    if (points.size() == 2) {
      analysis.slope_ms_per_sample = (points[1].median_ms - points[0].median_ms) /
                                     static_cast<double>(points[1].batch_size - points[0].batch_size);
    }
    if (!points.empty()) {
      const std::vector<bool> no_spikes(points.size(), false);
      analysis.segments.push_back(fit_segment(points, 0, points.size() - 1, no_spikes));
    }
    return analysis;
  }

  const std::vector<Pair> pairs = make_pairs(points);
  // Many jumps inflate the noise and pull the local slopes up; re-detect without the pairs found
  // until the set stops changing, so that a dense staircase is still found.
  Pass pass;
  pass.found.assign(pairs.size(), false);
  pass.outliers.assign(pairs.size(), false);
  for (int round = 0; round < kMaxPasses; ++round) {
    Pass next = detect_once(points, pairs, pass, options);
    const bool settled = pass.clipped && next.found == pass.found && next.outliers == pass.outliers;
    pass = std::move(next);
    if (settled) break;
  }

  analysis.slope_ms_per_sample = pass.slope;
  std::vector<double> levels;
  for (const LevelPoint& p : points) levels.push_back(std::fabs(p.median_ms));
  analysis.noise_ms = pass.relative_noise * median(levels);
  analysis.tested_pairs = static_cast<int>(pairs.size());
  for (size_t i = 0; i < pass.pairs.size(); ++i) {
    const PairResult& r = pass.pairs[i];
    if (r.kind == Kind::kRise) {
      analysis.jumps.push_back(make_jump(points, i, r.rise_excess, r.sigma, options.z_threshold));
    } else if (r.kind == Kind::kDrop) {
      analysis.drops.push_back(make_jump(points, i, r.drop_excess, r.sigma, options.z_threshold));
    } else if (r.kind == Kind::kSpikeRise) {
      analysis.spikes.push_back(points[i + 1].batch_size);
    }
  }
  add_segments(points, pass, options.z_threshold, analysis);
  analysis.fast_sizes = find_fast_sizes(points, analysis.spikes, options);
  return analysis;
}

}  // namespace batchscope
