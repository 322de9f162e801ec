#include "lib/analysis/run_comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "lib/analysis/grouping.h"
#include "lib/analysis/jump_detector.h"
#include "lib/common/statistics.h"
#include "lib/common/words.h"

namespace batchscope {
namespace {

using SizeKey = std::pair<std::string, int64_t>;

// Every timed step's time per (experiment, batch size), the passes of a repeated sweep together and
// apart, and the experiments in the order they first appear.
struct StepTimes {
  std::vector<std::string> order;
  std::map<SizeKey, std::vector<double>> times;
  std::map<SizeKey, std::string> lost;  // "out of memory" or "skipped" (after a smaller size ran out)
  std::map<SizeKey, std::map<int64_t, std::vector<double>>> pass_times;  // by pass (0: a sweep of one)
};

StepTimes step_times(const LoadedLog& log) {
  StepTimes out;
  for (const SweepRecord& r : log.records) {
    if (const auto* oom = std::get_if<OomRecord>(&r))
      out.lost[{oom->key.experiment, oom->key.batch_size}] = "out of memory";
    if (const auto* skipped = std::get_if<SkippedRecord>(&r))
      out.lost.emplace(SizeKey{skipped->key.experiment, skipped->key.batch_size}, "skipped");
    const auto* step = std::get_if<StepRecord>(&r);
    if (step == nullptr) continue;
    const std::string& experiment = step->key.experiment;
    if (std::find(out.order.begin(), out.order.end(), experiment) == out.order.end()) out.order.push_back(experiment);
    out.times[{experiment, step->key.batch_size}].push_back(step->time_ms);
    out.pass_times[{experiment, step->key.batch_size}][step->key.pass.value_or(0)].push_back(step->time_ms);
  }
  return out;
}

// The standard error of a size's median, relative to it: the larger of the one from its steps' spread
// and, where the sweep repeated its passes, the one from the spread of the pass medians (their standard
// deviation / sqrt(passes)), which sees what the machine drifted between passes. The same noise as
// analyze gives a size's level.
double relative_error(const std::vector<double>& times, const std::map<int64_t, std::vector<double>>& passes,
                      double median_ms) {
  double se = median_standard_error(times);
  if (passes.size() > 1) {
    std::vector<double> medians;
    for (const auto& [pass, pass_times] : passes) medians.push_back(median(pass_times));
    se = std::max(se, standard_error_of_mean(medians).value_or(0.0));
  }
  return median_ms > 0 ? se / median_ms : 0;
}

std::string size_name(const SizeKey& key) { return key.first + " batch " + std::to_string(key.second); }

// Each experiment's fast sizes in both runs, from the sizes compared (in batch order within each).
std::vector<FastSizesInBoth> fast_sizes_of(const std::vector<SizeComparison>& sizes,
                                           const std::map<SizeKey, std::pair<double, double>>& errors) {
  std::vector<FastSizesInBoth> out;
  for (std::size_t first = 0; first < sizes.size();) {
    std::size_t last = first;
    while (last < sizes.size() && sizes[last].experiment == sizes[first].experiment) ++last;
    std::vector<LevelPoint> baseline, contender;
    for (std::size_t i = first; i < last; ++i) {
      const auto& [rb, ro] = errors.at({sizes[i].experiment, sizes[i].batch_size});
      baseline.push_back({sizes[i].batch_size, sizes[i].baseline_ms, rb * sizes[i].baseline_ms});
      contender.push_back({sizes[i].batch_size, sizes[i].contender_ms, ro * sizes[i].contender_ms});
    }
    FastSizesInBoth f{sizes[first].experiment, detect_jumps(baseline).fast_sizes,
                      detect_jumps(contender).fast_sizes};
    if (!f.baseline.empty() || !f.contender.empty()) out.push_back(std::move(f));
    first = last;
  }
  return out;
}

bool overlap(const FastSizes& a, const FastSizes& b) {
  return a.first_batch <= b.last_batch && b.first_batch <= a.last_batch;
}

std::string range_name(const FastSizes& f) {
  return f.first_batch == f.last_batch ? std::to_string(f.first_batch)
                                       : std::to_string(f.first_batch) + "–" + std::to_string(f.last_batch);
}

// "in both runs 23–24, 32, 40 (39–40 in the contender); in the baseline only 26; in the contender only 30"
std::string fast_sizes_sentence(const FastSizesInBoth& f) {
  std::vector<std::string> both, baseline_only, contender_only;
  for (const FastSizes& b : f.baseline) {
    const auto match = std::find_if(f.contender.begin(), f.contender.end(),
                                    [&](const FastSizes& c) { return overlap(b, c); });
    if (match == f.contender.end()) {
      baseline_only.push_back(range_name(b));
    } else {
      both.push_back(range_name(b) + (range_name(*match) == range_name(b)
                                          ? ""
                                          : " (" + range_name(*match) + " in the contender)"));
    }
  }
  for (const FastSizes& c : f.contender) {
    if (std::none_of(f.baseline.begin(), f.baseline.end(),
                     [&](const FastSizes& b) { return overlap(b, c); })) {
      contender_only.push_back(range_name(c));
    }
  }
  std::string out;
  const auto part = [&](const char* label, const std::vector<std::string>& names) {
    if (names.empty()) return;
    out += (out.empty() ? "" : "; ") + std::string(label);
    for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : " ") + names[i];
  };
  part("in both runs", both);
  part("in the baseline only", baseline_only);
  part("in the contender only", contender_only);
  return out;
}

}  // namespace

RunComparison compare_runs(const LoadedLog& baseline, const LoadedLog& contender, double threshold, double z,
                           int min_samples) {
  RunComparison c;
  c.threshold = threshold;
  c.z = z;
  const StepTimes base = step_times(baseline), other = step_times(contender);
  std::map<SizeKey, std::pair<double, double>> errors;  // each compared size's relative standard errors
  for (const std::string& experiment : base.order) {
    for (auto it = base.times.lower_bound({experiment, INT64_MIN});
         it != base.times.end() && it->first.first == experiment; ++it) {
      const auto found = other.times.find(it->first);
      const std::vector<double>& b = it->second;
      if (found == other.times.end() && other.lost.count(it->first)) {
        c.lost.push_back(size_name(it->first) + " (" + other.lost.at(it->first) + ")");
        continue;
      }
      if (found == other.times.end() || static_cast<int>(b.size()) < min_samples ||
          static_cast<int>(found->second.size()) < min_samples) {
        c.unmatched.push_back(size_name(it->first));
        continue;
      }
      const std::vector<double>& o = found->second;
      SizeComparison s;
      s.experiment = experiment;
      s.batch_size = it->first.second;
      s.baseline_ms = summarize(b).median;
      s.contender_ms = summarize(o).median;
      if (!(s.baseline_ms > 0)) {
        c.unmatched.push_back(size_name(it->first));
        continue;
      }
      s.ratio = s.contender_ms / s.baseline_ms;
      const auto& b_passes = base.pass_times.at(it->first);
      const auto& o_passes = other.pass_times.at(it->first);
      s.baseline_passes = static_cast<int>(b_passes.size());
      s.contender_passes = static_cast<int>(o_passes.size());
      const double rb = relative_error(b, b_passes, s.baseline_ms);
      const double ro = relative_error(o, o_passes, s.contender_ms);
      s.noise = z * s.ratio * std::sqrt(rb * rb + ro * ro);
      errors[it->first] = {rb, ro};
      const double difference = std::fabs(s.ratio - 1);
      if (difference <= s.noise) {
        s.verdict = "within noise";
      } else if (difference <= threshold) {
        s.verdict = "below threshold";
      } else {
        s.verdict = s.ratio > 1 ? "slower" : "faster";
        (s.ratio > 1 ? c.slower : c.faster) += 1;
      }
      c.sizes.push_back(s);
    }
  }
  for (const auto& [key, times] : other.times) {
    if (base.times.find(key) != base.times.end()) continue;
    if (base.lost.count(key)) {
      c.gained.push_back(size_name(key) + " (" + base.lost.at(key) + " in the baseline)");
    } else {
      c.unmatched.push_back(size_name(key));
    }
  }
  c.fast_sizes = fast_sizes_of(c.sizes, errors);
  // An experiment of the same name that measured another thing: said, so that a difference is not read as
  // the code's when the setting explains it.
  const std::map<std::string, Json> was = experiment_identities(baseline),
                                    is = experiment_identities(contender);
  const auto shown = [](const Json& v) {
    return v.is_null() ? std::string("none") : v.is_string() ? v.get<std::string>() : v.dump();
  };
  for (const std::string& experiment : base.order) {
    const auto a = was.find(experiment), b = is.find(experiment);
    if (a == was.end() || b == is.end() || a->second == b->second) continue;
    std::set<std::string> keys;
    for (const auto& [key, value] : a->second.items()) keys.insert(key);
    for (const auto& [key, value] : b->second.items()) keys.insert(key);
    std::string changes;
    for (const std::string& key : keys) {
      const Json before = a->second.value(key, Json()), after = b->second.value(key, Json());
      if (before == after) continue;
      changes += (changes.empty() ? "" : ", ") + key + " " + shown(before) + " → " + shown(after);
    }
    c.differences.push_back(experiment + ": " + changes);
  }
  return c;
}

std::string format_run_comparison(const RunComparison& c) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %8s %13s %13s %8s %8s  %s\n", "experiment", "batch", "baseline ms",
                "contender ms", "ratio", "noise ±", "verdict");
  out += line;
  for (const SizeComparison& s : c.sizes) {
    std::snprintf(line, sizeof line, "%-28s %8lld %13.3f %13.3f %8.4f %8.4f  %s\n", s.experiment.c_str(),
                  static_cast<long long>(s.batch_size), s.baseline_ms, s.contender_ms, s.ratio, s.noise,
                  s.verdict.c_str());
    out += line;
  }
  char threshold[32];
  std::snprintf(threshold, sizeof threshold, "%g%%", 100 * c.threshold);
  out += "\n" + counted(static_cast<long long>(c.sizes.size()), "batch size") + " compared";
  const auto rest = static_cast<long long>(c.sizes.size()) - c.slower - c.faster;
  if (c.slower == 0 && c.faster == 0) {
    out += ": no difference beyond the noise and " + std::string(threshold) + ".\n";
  } else {
    out += ": " + std::to_string(c.slower) + " slower and " + std::to_string(c.faster) +
           " faster beyond the noise and " + threshold + (rest > 0 ? "; the rest the same.\n" : ".\n");
  }
  const auto listed = [&](const std::string& label, const std::vector<std::string>& names) {
    if (names.empty()) return;
    out += label;
    for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
    out += ".\n";
  };
  listed("Lost in the contender (measured in the baseline): ", c.lost);
  for (const std::string& d : c.differences) out += "The runs did not measure the same thing: " + d + ".\n";
  listed("Fit in the contender only: ", c.gained);
  if (!c.unmatched.empty()) {
    out += "Not compared (measured in one run only, or with too few steps): ";
    for (std::size_t i = 0; i < c.unmatched.size(); ++i) out += (i ? ", " : "") + c.unmatched[i];
    out += ".\n";
  }
  for (const FastSizesInBoth& f : c.fast_sizes) {
    out += "Fast sizes of " + f.experiment +
           " (faster than the sizes on both sides): " + fast_sizes_sentence(f) + ".\n";
  }
  return out;
}

}  // namespace batchscope
