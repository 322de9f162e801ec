#include "lib/analysis/energy.h"

#include <algorithm>
#include <map>
#include <set>

#include "lib/common/statistics.h"

namespace batchscope {
namespace {

void add_distinct(std::vector<std::string>& values, const std::string& value) {
  if (!value.empty() && std::find(values.begin(), values.end(), value) == values.end())
    values.push_back(value);
}

// The point's energy where it can be compared: a trusted window over enough steps, with samples/J.
const PointEnergyStats* comparable(const PointStats& p) {
  if (p.too_few_samples || !p.energy || p.energy->low_confidence) return nullptr;
  return p.energy->samples_per_j && *p.energy->samples_per_j > 0 ? &*p.energy : nullptr;
}

}  // namespace

std::optional<EnergyRatioCurve> energy_ratio(const GroupAnalysis& baseline, const GroupAnalysis& g) {
  if (!baseline.energy || !g.energy) return std::nullopt;
  std::map<int64_t, const PointEnergyStats*> base;
  for (const PointStats& p : baseline.points) {
    if (const PointEnergyStats* e = comparable(p)) base[p.batch_size] = e;
  }
  EnergyRatioCurve curve;
  std::vector<double> ratios;
  for (const PointStats& p : g.points) {
    const PointEnergyStats* e = comparable(p);
    const auto b = base.find(p.batch_size);
    if (!e || b == base.end()) continue;
    EnergyRatioPoint point{p.batch_size, *e->samples_per_j / *b->second->samples_per_j, std::nullopt};
    const std::optional<double>& above = e->samples_per_j_above_idle;
    const std::optional<double>& base_above = b->second->samples_per_j_above_idle;
    if (above && base_above && *base_above > 0) point.ratio_above_idle = *above / *base_above;
    const double r = point.ratio;
    if (ratios.empty() || r < curve.min_ratio) {
      curve.min_ratio = r;
      curve.min_at = p.batch_size;
    }
    if (ratios.empty() || r > curve.max_ratio) {
      curve.max_ratio = r;
      curve.max_at = p.batch_size;
    }
    ratios.push_back(r);
    curve.points.push_back(point);
  }
  if (ratios.empty()) return std::nullopt;
  curve.median_ratio = median(ratios);
  curve.best = g.energy->most_efficient;
  curve.baseline_best = baseline.energy->most_efficient;
  // What a scope covers, apart from which device it is: "GPU board" (NVML) or "CPU packages" (RAPL).
  const auto kinds = [](const GroupEnergy& e) {
    std::set<std::string> out;
    for (const std::string& s : e.scopes) {
      out.insert(s.rfind("GPU ", 0) == 0 && s.size() > 6 && s.compare(s.size() - 6, 6, " board") == 0
                     ? "GPU board"
                 : s.rfind("CPU packages", 0) == 0 ? "CPU packages"
                                                   : s);
    }
    std::string text;
    for (const std::string& k : out) text += (text.empty() ? "" : ", ") + k;
    return text;
  };
  if (kinds(*g.energy) != kinds(*baseline.energy))
    curve.scopes_differ = kinds(*g.energy) + " vs " + kinds(*baseline.energy);
  return curve;
}

std::string describe_sizes(const std::vector<int64_t>& sizes, const GroupAnalysis& g) {
  auto index = [&](int64_t b) {
    const auto it = std::find_if(g.points.begin(), g.points.end(),
                                 [&](const PointStats& p) { return p.batch_size == b; });
    return it - g.points.begin();
  };
  std::string out;
  for (size_t i = 0; i < sizes.size();) {
    size_t j = i;
    while (j + 1 < sizes.size() && index(sizes[j + 1]) == index(sizes[j]) + 1) ++j;
    if (!out.empty()) out += ", ";
    if (j - i >= 2) {
      out += std::to_string(sizes[i]) + "–" + std::to_string(sizes[j]);
    } else {
      for (size_t k = i; k <= j; ++k) out += (k > i ? ", " : "") + std::to_string(sizes[k]);
    }
    i = j + 1;
  }
  return out;
}

void analyze_energy(GroupAnalysis& g) {
  GroupEnergy energy;
  for (const PointStats& p : g.points) {
    if (!p.energy) continue;
    const PointEnergyStats& e = *p.energy;
    ++energy.points;
    add_distinct(energy.methods, e.method);
    add_distinct(energy.scopes, e.scope);
    if (e.resolution_ms) energy.resolution_ms = std::max(energy.resolution_ms.value_or(0), *e.resolution_ms);
    if (e.idle_power_w) energy.idle_baseline = true;
    if (e.start.sm_clock_mhz) {
      energy.highest_start_sm_clock_mhz =
          std::max(energy.highest_start_sm_clock_mhz.value_or(0), *e.start.sm_clock_mhz);
    }
  }
  if (energy.points == 0) return;

  for (PointStats& p : g.points) {
    if (!p.energy) continue;
    PointEnergyStats& e = *p.energy;
    const std::optional<double> window = e.shortest_window_ms ? e.shortest_window_ms : e.window_ms;
    e.low_confidence = window && e.resolution_ms && *window < kMinUpdatesPerWindow * *e.resolution_ms;
    if (e.low_confidence) energy.low_confidence.push_back(p.batch_size);

    Throttling t;
    t.batch_size = p.batch_size;
    t.start_sm_clock_mhz = e.start.sm_clock_mhz;
    t.end_sm_clock_mhz = e.end.sm_clock_mhz;
    t.start_temperature_c = e.start.temperature_c;
    t.end_temperature_c = e.end.temperature_c;
    t.fell_in_window = t.start_sm_clock_mhz && t.end_sm_clock_mhz &&
                       *t.end_sm_clock_mhz < kThrottleShare * *t.start_sm_clock_mhz;
    // The clock the work ended on, or the only one known.
    const std::optional<double> clock = t.end_sm_clock_mhz ? t.end_sm_clock_mhz : t.start_sm_clock_mhz;
    t.below_group = clock && energy.highest_start_sm_clock_mhz &&
                    *clock < kThrottleShare * *energy.highest_start_sm_clock_mhz;
    e.throttled = t.fell_in_window || t.below_group;
    if (e.throttled) energy.throttled.push_back(t);

    if (p.too_few_samples || e.low_confidence) continue;
    if (e.samples_per_j &&
        (!energy.most_efficient || *e.samples_per_j > energy.most_efficient->samples_per_j)) {
      energy.most_efficient = EnergyChoice{p.batch_size,  *e.samples_per_j, e.j_per_sample,
                                           e.avg_power_w, p.samples_per_s,  p.median_ms};
    }
    const bool above_idle_measurable = e.avg_power_above_idle_w && e.idle_power_w &&
                                       *e.avg_power_above_idle_w >= kMinAboveIdleShare * *e.idle_power_w;
    if (e.samples_per_j_above_idle && above_idle_measurable &&
        (!energy.most_efficient_above_idle ||
         *e.samples_per_j_above_idle > energy.most_efficient_above_idle->samples_per_j)) {
      energy.most_efficient_above_idle = EnergyChoice{p.batch_size,
                                                      *e.samples_per_j_above_idle,
                                                      e.j_per_sample_above_idle,
                                                      e.avg_power_above_idle_w,
                                                      p.samples_per_s,
                                                      p.median_ms};
    }
  }
  g.energy = std::move(energy);
}

std::vector<std::string> energy_warnings(const GroupAnalysis& g) {
  std::vector<std::string> out;
  if (!g.energy) return out;
  if (!g.energy->throttled.empty()) {
    std::vector<int64_t> sizes;
    for (const Throttling& t : g.energy->throttled) sizes.push_back(t.batch_size);
    out.push_back(g.label +
                  ": the SM clock ran more than 10% below its start or the group's highest (throttling) at "
                  "batch size(s) " +
                  describe_sizes(sizes, g) +
                  ": their step times and energy are those of a slower device; see the report's Energy part");
  }
  if (!g.energy->low_confidence.empty()) {
    out.push_back(g.label + ": the energy of batch size(s) " + describe_sizes(g.energy->low_confidence, g) +
                  " was read over less than 10 updates of the power source, so it is shown but left out "
                  "of the most efficient size");
  }
  return out;
}

}  // namespace batchscope
