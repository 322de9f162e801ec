#include "lib/analysis/periodicity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "lib/common/statistics.h"

namespace batchscope {
namespace {

constexpr int kTestedPeriods[] = {8, 16, 32, 64};
constexpr int kMinHits = 2;
constexpr double kMinScore = 0.5;
constexpr double kMaxPValue = 0.01;
constexpr int kRankTestedPeriods[] = {8, 16, 32};
// Up to this many steps the rank-sum test counts every draw; beyond, the normal approximation.
constexpr std::size_t kExactRankSumSteps = 100;

// The smallest multiple of k at or above from, which lies in [from, to) when the step crosses one.
int64_t first_multiple_at_or_above(int64_t from, int k) {
  const int64_t kk = k;
  const int64_t q = from >= 0 ? (from + kk - 1) / kk : -((-from) / kk);
  return q * kk;
}

bool crosses_multiple(int64_t from, int64_t to, int k) {
  const int64_t m = first_multiple_at_or_above(std::max<int64_t>(from, 1), k);
  return m < to;
}

// P(X >= hits) for X ~ Binomial(trials, chance).
double binomial_upper_tail(int trials, int hits, double chance) {
  if (hits <= 0) return 1.0;
  if (hits > trials || chance <= 0) return 0.0;
  if (chance >= 1) return 1.0;
  double tail = 0;
  for (int x = hits; x <= trials; ++x) {
    const double log_term = std::lgamma(trials + 1.0) - std::lgamma(x + 1.0) - std::lgamma(trials - x + 1.0) +
                            x * std::log(chance) + (trials - x) * std::log1p(-chance);
    tail += std::exp(log_term);
  }
  return std::min(1.0, tail);
}

PeriodCheck check_period(int k, const std::vector<Jump>& jumps, const std::vector<int64_t>& measured,
                         std::vector<int64_t>* multiples_hit) {
  PeriodCheck check;
  check.k = k;
  check.jumps = static_cast<int>(jumps.size());
  for (const Jump& j : jumps) {
    if (crosses_multiple(j.from_batch, j.to_batch, k)) ++check.jumps_on_multiples;
  }
  if (measured.size() < 2) return check;
  // Each step between measured neighbours that crosses a multiple is one place a jump on a multiple
  // could show; it has one where a jump spans it.
  for (size_t i = 0; i + 1 < measured.size(); ++i) {
    const int64_t from = measured[i], to = measured[i + 1];
    if (!crosses_multiple(from, to, k)) continue;
    ++check.multiples_in_range;
    const bool hit = std::any_of(jumps.begin(), jumps.end(),
                                 [&](const Jump& j) { return j.from_batch < to && from < j.to_batch; });
    if (hit) {
      ++check.multiples_with_jump;
      if (multiples_hit) multiples_hit->push_back(first_multiple_at_or_above(std::max<int64_t>(from, 1), k));
    }
  }
  // Under the null a jump is as likely between any two measured neighbours; with gaps wider than
  // one, more of those steps cross a multiple of k than 1 in k.
  const double chance =
      static_cast<double>(check.multiples_in_range) / static_cast<double>(measured.size() - 1);
  check.p_value = binomial_upper_tail(check.jumps, check.jumps_on_multiples, chance);
  if (check.jumps > 0 && check.multiples_in_range > 0) {
    const double on = static_cast<double>(check.jumps_on_multiples) / check.jumps;
    const double covered = static_cast<double>(check.multiples_with_jump) / check.multiples_in_range;
    check.score = on + covered > 0 ? 2 * on * covered / (on + covered) : 0.0;
  }
  return check;
}

// Whether the measured sizes can show a period of k: as many steps between neighbours no wider than k
// cross a multiple of it as a period needs hits (a wider gap may cross several, and a jump there could
// follow any).
bool resolves(const std::vector<int64_t>& measured, int k) {
  int crossing = 0;
  for (size_t i = 0; i + 1 < measured.size(); ++i) {
    if (measured[i + 1] - measured[i] <= k && crosses_multiple(measured[i], measured[i + 1], k)) ++crossing;
  }
  return crossing >= kMinHits;
}

bool better(const PeriodCheck& a, const PeriodCheck& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.p_value != b.p_value) return a.p_value < b.p_value;
  return a.k > b.k;
}

std::string format_p(double p) {
  if (p < 0.001) return "p < 0.001";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "p = %.2g", p);
  return buffer;
}

std::string join(const std::vector<int64_t>& values) {
  std::ostringstream out;
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  return out.str();
}

std::string verdict(const std::vector<Jump>& jumps, const std::vector<int64_t>& measured,
                    const Periodicity& result, int tried) {
  std::ostringstream out;
  if (jumps.empty() && measured.size() < 3)
    return "Not tested: fewer than three batch sizes have enough timed steps to look for jumps.";
  if (jumps.empty()) return "No jumps: step time follows the trend.";
  if (jumps.size() == 1) {
    out << "One jump (" << jumps[0].from_batch << "\u2192" << jumps[0].to_batch
        << "): too few to show a period.";
    return out.str();
  }
  if (!result.best)
    return "The measured batch sizes are too few or too far apart to test the jumps for a period (no k has "
           "two "
           "steps between neighbours no wider than k that cross a multiple of it).";
  const PeriodCheck& b = *result.best;
  const std::string range = std::to_string(measured.front()) + "\u2013" + std::to_string(measured.back());
  std::vector<int64_t> hit;
  check_period(b.k, jumps, measured, &hit);
  const std::string on_multiples = std::to_string(b.jumps_on_multiples) + " of " + std::to_string(b.jumps) +
                                   " jumps fall on multiples of " + std::to_string(b.k) + " (" + join(hit) +
                                   ")";
  if (result.periodic) {
    out << on_multiples << ", and ";
    if (b.multiples_with_jump == b.multiples_in_range) {
      out << "every multiple of " << b.k << " in " << range << " has one";
    } else {
      out << b.multiples_with_jump << " of the " << b.multiples_in_range << " steps across its multiples in "
          << range << " have one";
    }
    out << ": periodic with k = " << b.k << " (" << format_p(std::min(1.0, b.p_value * tried)) << " over "
        << tried << " periods tried).";
  } else if (b.jumps_on_multiples < kMinHits || (b.jumps_on_multiples < b.jumps && b.p_value >= kMaxPValue)) {
    out << "The " << b.jumps << " jumps do not fall on a common multiple (best k = " << b.k << ": "
        << b.jumps_on_multiples << " of " << b.jumps << ", " << format_p(b.p_value) << ")";
    // A small k can hold every jump and still be no period: most of its multiples have none.
    for (const PeriodCheck& t : result.tested) {
      if (t.jumps_on_multiples == t.jumps && t.jumps >= kMinHits) {
        out << "; all " << t.jumps << " fall on multiples of " << t.k << ", but only "
            << t.multiples_with_jump << " of the " << t.multiples_in_range
            << " steps across its multiples in " << range << " have one";
        break;
      }
    }
    out << ".";
  } else if (b.score < kMinScore) {
    out << on_multiples << ", but only " << b.multiples_with_jump << " of the " << b.multiples_in_range
        << " steps across its multiples in " << range << " have one: not periodic.";
  } else if (b.p_value >= kMaxPValue) {
    out << on_multiples << ", but that is within chance (" << format_p(b.p_value) << "): not periodic.";
  } else {
    out << on_multiples << ", but with " << tried << " periods tried that is within chance ("
        << format_p(b.p_value) << " for k = " << b.k << " alone): not periodic.";
  }
  return out.str();
}

// P(the doubled ranks of `picked` steps drawn at random add up to at least `observed`): exact by counting
// the draws (ties keep their averaged ranks) up to kExactRankSumSteps steps, else the normal
// approximation with a continuity correction.
double rank_sum_upper_tail(const std::vector<int64_t>& doubled_ranks, std::size_t picked, int64_t observed) {
  const std::size_t n = doubled_ranks.size();
  if (picked == 0 || picked > n) return 1.0;
  if (n <= kExactRankSumSteps) {
    const auto total =
        static_cast<std::size_t>(std::accumulate(doubled_ranks.begin(), doubled_ranks.end(), int64_t{0}));
    // draws[j][s]: the draws of j steps among those seen so far whose doubled ranks add up to s.
    std::vector<std::vector<double>> draws(picked + 1, std::vector<double>(total + 1, 0.0));
    draws[0][0] = 1;
    for (std::size_t i = 0; i < n; ++i) {
      const auto r = static_cast<std::size_t>(doubled_ranks[i]);
      for (std::size_t j = std::min(picked, i + 1); j >= 1; --j) {
        for (std::size_t s = total; s >= r; --s) {
          draws[j][s] += draws[j - 1][s - r];
          if (s == r) break;
        }
      }
    }
    double all = 0, tail = 0;
    for (std::size_t s = 0; s <= total; ++s) {
      all += draws[picked][s];
      if (static_cast<int64_t>(s) >= observed) tail += draws[picked][s];
    }
    return all > 0 ? std::min(1.0, tail / all) : 1.0;
  }
  const double nn = static_cast<double>(n), m = static_cast<double>(picked);
  const double mean = m * (nn + 1);  // of the doubled rank sum
  double squares = 0;
  for (int64_t r : doubled_ranks) squares += static_cast<double>(r) * static_cast<double>(r);
  const double one_rank_variance = squares / nn - (nn + 1) * (nn + 1);
  const double sd = std::sqrt(std::max(0.0, one_rank_variance * m * (nn - m) / (nn - 1)));
  if (sd == 0) return 1.0;
  return 0.5 * std::erfc((static_cast<double>(observed) - 1 - mean) / (sd * std::sqrt(2.0)));
}

}  // namespace

std::vector<RisesAfterMultiples> rises_after_multiples(const std::vector<LevelPoint>& points) {
  // Every step b -> b + 1 and its rise beyond the typical one, relative to its step time.
  std::vector<int64_t> from;
  std::vector<double> differences, levels;
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    if (points[i + 1].batch_size != points[i].batch_size + 1 || points[i].median_ms <= 0) continue;
    from.push_back(points[i].batch_size);
    differences.push_back(points[i + 1].median_ms - points[i].median_ms);
    levels.push_back(points[i].median_ms);
  }
  std::vector<RisesAfterMultiples> out;
  if (from.size() < 3) return out;
  const double typical = median(differences);
  std::vector<double> rises;
  // Rounded to 1e-9 (a millionth of a percent), so that steps equal but for rounding rank as ties.
  for (std::size_t i = 0; i < from.size(); ++i)
    rises.push_back(std::round((differences[i] - typical) / levels[i] * 1e9) / 1e9 + 0.0);  // no -0
  // Doubled ranks, 2 for the smallest, ties sharing the average.
  std::vector<std::size_t> order(rises.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rises[a] < rises[b]; });
  std::vector<int64_t> doubled(rises.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && rises[order[j + 1]] == rises[order[i]]) ++j;
    for (std::size_t t = i; t <= j; ++t) doubled[order[t]] = static_cast<int64_t>(i + j + 2);
    i = j + 1;
  }
  const double n = static_cast<double>(rises.size());
  for (int k : kRankTestedPeriods) {
    RisesAfterMultiples r;
    r.k = k;
    r.steps = static_cast<int>(rises.size());
    int64_t rank_sum = 0;
    double percentiles = 0;
    for (std::size_t i = 0; i < from.size(); ++i) {
      if (from[i] % k != 0) continue;
      r.rises.emplace_back(from[i], rises[i]);
      rank_sum += doubled[i];
      // The other steps below it, and half of those it ties with.
      percentiles += 100.0 * (static_cast<double>(doubled[i]) / 2 - 1) / (n - 1);
    }
    if (r.rises.size() < kMinHits) continue;
    r.mean_percentile = percentiles / static_cast<double>(r.rises.size());
    r.p_value = rank_sum_upper_tail(doubled, r.rises.size(), rank_sum);
    out.push_back(std::move(r));
  }
  return out;
}

Periodicity analyze_periodicity(const std::vector<Jump>& jumps,
                                const std::vector<int64_t>& measured_batches) {
  if (!std::is_sorted(measured_batches.begin(), measured_batches.end())) {
    throw std::invalid_argument("analyze_periodicity needs the measured batch sizes sorted");
  }
  Periodicity result;
  for (int k : kTestedPeriods) result.tested.push_back(check_period(k, jumps, measured_batches, nullptr));
  int tried = 0;
  if (!jumps.empty() && measured_batches.size() >= 2) {
    const int64_t largest_k = (measured_batches.back() - measured_batches.front() + 1) / 2;
    for (int64_t k = 2; k <= largest_k; ++k) {
      if (!resolves(measured_batches, static_cast<int>(k))) continue;
      ++tried;
      const PeriodCheck check = check_period(static_cast<int>(k), jumps, measured_batches, nullptr);
      if (!result.best || better(check, *result.best)) result.best = check;
    }
  }
  // The best of many k fits by chance more often than any one k: Bonferroni over the k tried.
  result.periodic = result.best && result.best->jumps_on_multiples >= kMinHits &&
                    result.best->score >= kMinScore && result.best->p_value * tried < kMaxPValue;
  result.periods_tried = tried;
  result.verdict = verdict(jumps, measured_batches, result, tried);
  return result;
}

}  // namespace batchscope
