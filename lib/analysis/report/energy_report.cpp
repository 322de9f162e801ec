#include "lib/analysis/report/energy_report.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "lib/analysis/energy.h"
#include "lib/analysis/report/report_markdown.h"

namespace batchscope {
namespace {

std::string value(const std::optional<double>& v, int digits = 4) {
  return v ? significant(*v, digits) : "–";
}

std::string from_to(const std::optional<double>& start, const std::optional<double>& end) {
  if (!start && !end) return "–";
  return value(start, 3) + "→" + value(end, 3);
}

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : "; ") + v;
  return out;
}

// "60.1 W", or "58.2–61.0 W" where merged logs measured different idle baselines.
std::string idle_range(const GroupAnalysis& g) {
  std::optional<double> lo, hi;
  for (const PointStats& p : g.points) {
    if (!p.energy || !p.energy->idle_power_w) continue;
    const double w = *p.energy->idle_power_w;
    lo = std::min(lo.value_or(w), w);
    hi = std::max(hi.value_or(w), w);
  }
  if (!lo) return "unknown";
  return significant(*lo, 3) + (*hi > *lo ? "–" + significant(*hi, 3) : "") + " W";
}

void write_method(std::ostream& out, const GroupAnalysis& g, const GroupEnergy& e) {
  out << "Energy was measured at " << e.points << " of " << g.points.size() << " batch sizes";
  if (!e.methods.empty()) out << " with " << joined(e.methods);
  if (!e.scopes.empty()) out << " (" << joined(e.scopes) << ")";
  if (e.resolution_ms) out << ", which updates every " << significant(*e.resolution_ms, 3) << " ms";
  out << ". It is read over the timed steps of a batch size together, not per step, because the source "
         "updates too rarely to tell one step from the next: J/step is that energy divided by the steps it "
         "covered, J/sample divides it by the batch size as well, and samples/J is its inverse.";
  if (e.idle_baseline) {
    out << " An idle baseline was measured (" << idle_range(g)
        << "): J/step, J/sample, avg W and samples/J include the draw the device has anyway, and the "
           "above-idle "
           "columns take it away, leaving what the work itself costs.\n\n";
  } else {
    out << " No idle baseline was measured, so every number includes the draw the device has when idle as "
           "well as that of the work.\n\n";
  }
}

void write_throttling(std::ostream& out, const GroupEnergy& e) {
  if (e.throttled.empty()) return;
  out << "> **Warning: throttling.** At " << e.throttled.size()
      << " batch size(s) the SM clock ran more than 10% below its value at the start of the window, or below "
         "90% of the group's highest start clock ("
      << value(e.highest_start_sm_clock_mhz)
      << " MHz): their step times and energy are those of a slower device.\n>\n";
  for (const Throttling& t : e.throttled) {
    out << "> - batch " << t.batch_size << ": SM clock " << from_to(t.start_sm_clock_mhz, t.end_sm_clock_mhz)
        << " MHz, temperature " << from_to(t.start_temperature_c, t.end_temperature_c) << " °C";
    if (t.fell_in_window) {
      out << " (fell " << significant(100 * (1 - *t.end_sm_clock_mhz / *t.start_sm_clock_mhz), 2)
          << "% in the window)";
    }
    out << "\n";
  }
  out << "\n";
}

std::string note(const PointStats& p, const GroupEnergy& e) {
  std::vector<std::string> notes;
  if (e.most_efficient && e.most_efficient->batch_size == p.batch_size) notes.push_back("most efficient");
  if (e.most_efficient_above_idle && e.most_efficient_above_idle->batch_size == p.batch_size)
    notes.push_back("most efficient above idle");
  if (p.energy->low_confidence)
    notes.push_back("low confidence: " + value(p.energy->window_ms, 3) + " ms window, not used");
  if (p.energy->throttled) notes.push_back("throttled");
  if (p.too_few_samples) notes.push_back("too few steps: not used");
  return joined(notes);
}

void write_table(std::ostream& out, const GroupAnalysis& g, const GroupEnergy& e) {
  out << "<details><summary>Energy per batch size (" << e.points << ")</summary>\n\n"
      << "| batch | steps | window ms | J/step | J/sample | avg W | samples/J |";
  if (e.idle_baseline) out << " J/sample above idle | samples/J above idle |";
  out << " SM clock MHz | temperature °C | note |\n|---:|---:|---:|---:|---:|---:|---:|";
  if (e.idle_baseline) out << "---:|---:|";
  out << "---|---|---|\n";
  for (const PointStats& p : g.points) {
    if (!p.energy) continue;
    const PointEnergyStats& x = *p.energy;
    out << "| " << p.batch_size << " | " << (x.steps ? std::to_string(*x.steps) : "–") << " | "
        << value(x.window_ms) << " | " << value(x.j_per_step) << " | " << value(x.j_per_sample) << " | "
        << value(x.avg_power_w) << " | " << value(x.samples_per_j) << " |";
    if (e.idle_baseline)
      out << " " << value(x.j_per_sample_above_idle) << " | " << value(x.samples_per_j_above_idle) << " |";
    out << " " << from_to(x.start.sm_clock_mhz, x.end.sm_clock_mhz) << " | "
        << from_to(x.start.temperature_c, x.end.temperature_c) << " | " << note(p, e) << " |\n";
  }
  out << "\n</details>\n\n";
}

void write_choice(std::ostream& out, const char* what, const std::optional<EnergyChoice>& c,
                  const char* power) {
  out << "- " << what << ": ";
  if (!c) {
    out << "none (no batch size with a trusted energy window and enough steps)\n";
    return;
  }
  out << "batch " << c->batch_size << ", " << significant(c->samples_per_j) << " samples/J ("
      << value(c->j_per_sample) << " J/sample at " << value(c->avg_power_w) << " W" << power << ", "
      << significant(c->samples_per_s) << " samples/s)\n";
}

std::string best_of(const std::optional<EnergyChoice>& c) {
  return c ? "batch " + std::to_string(c->batch_size) + " at " + significant(c->samples_per_j) + " samples/J"
           : "unknown";
}

std::string ratio_at(const SpeedupCurve& s, int64_t batch, bool above_idle) {
  for (const EnergyRatioPoint& p : s.energy->points) {
    if (p.batch_size != batch) continue;
    if (!above_idle) return significant(p.ratio, 3);
    return p.ratio_above_idle ? significant(*p.ratio_above_idle, 3) : "–";
  }
  return "–";
}

bool has_above_idle(const SpeedupCurve& s) {
  return std::any_of(s.energy->points.begin(), s.energy->points.end(),
                     [](const EnergyRatioPoint& p) { return p.ratio_above_idle.has_value(); });
}

}  // namespace

void write_energy_comparison(std::ostream& out, const Comparison& c) {
  std::vector<const SpeedupCurve*> curves;
  for (const SpeedupCurve& s : c.curves) {
    if (s.energy) curves.push_back(&s);
  }
  if (curves.empty()) return;
  out << "**Energy efficiency:** samples/J ratio = samples per joule / the baseline's at the same batch size "
         "(> 1 does more work per joule), over the batch sizes where both sides read their energy over a "
         "trusted window and enough steps.\n\n";
  for (const SpeedupCurve& s : c.curves) {
    if (!s.energy) {
      out << "- " << s.label << ": no samples/J ratio, no batch size in common has trusted energy on both "
          << "sides\n";
      continue;
    }
    const EnergyRatioCurve& e = *s.energy;
    out << "- " << s.label << " does " << significant(e.median_ratio, 3) << "× the samples per joule of "
        << c.baseline_label << " (median of " << e.points.size() << " batch size(s); "
        << significant(e.min_ratio, 3) << "× at " << e.min_at << " to " << significant(e.max_ratio, 3)
        << "× at " << e.max_at << "); its most efficient is " << best_of(e.best) << ", " << c.baseline_label
        << "'s " << best_of(e.baseline_best) << "."
        << (e.scopes_differ.empty() ? ""
                                    : " Not the same scope of energy (" + e.scopes_differ +
                                          "): a GPU board's figure leaves out the host that drove it.")
        << "\n";
  }
  out << "\n<details><summary>Samples/J ratio per batch size</summary>\n\n| batch |";
  std::string rule = "|---:|";
  std::set<int64_t> batches;
  for (const SpeedupCurve* s : curves) {
    out << " " << s->label << " |" << (has_above_idle(*s) ? " " + s->label + " above idle |" : "");
    rule += has_above_idle(*s) ? "---:|---:|" : "---:|";
    for (const EnergyRatioPoint& p : s->energy->points) batches.insert(p.batch_size);
  }
  out << "\n" << rule << "\n";
  for (int64_t b : batches) {
    out << "| " << b << " |";
    for (const SpeedupCurve* s : curves) {
      out << " " << ratio_at(*s, b, false) << " |";
      if (has_above_idle(*s)) out << " " << ratio_at(*s, b, true) << " |";
    }
    out << "\n";
  }
  out << "\n</details>\n\n";
}

void write_energy_ratio_terminal(std::ostream& out, const Comparison& c, const SpeedupCurve& s) {
  if (!s.energy) return;
  const EnergyRatioCurve& e = *s.energy;
  out << c.workload << ": " << s.label << " vs " << c.baseline_label << ": median samples/J ratio "
      << significant(e.median_ratio, 3) << "x (" << significant(e.min_ratio, 3) << "x at " << e.min_at
      << " to " << significant(e.max_ratio, 3) << "x at " << e.max_at << "); most efficient "
      << best_of(e.best) << " vs " << best_of(e.baseline_best)
      << (e.scopes_differ.empty() ? "" : " (not the same scope: " + e.scopes_differ + ")") << "\n";
}

void write_energy_bests(std::ostream& out, const GroupAnalysis& g) {
  if (!g.energy) return;
  write_choice(out, "most energy-efficient", g.energy->most_efficient, "");
  if (g.energy->idle_baseline)
    write_choice(out, "most energy-efficient above idle", g.energy->most_efficient_above_idle, " above idle");
}

std::string energy_summary_cells(const GroupAnalysis& g) {
  if (!g.energy || !g.energy->most_efficient) return " – | – |";
  return " " + std::to_string(g.energy->most_efficient->batch_size) + " | " +
         significant(g.energy->most_efficient->samples_per_j) + " |";
}

void write_energy_section(std::ostream& out, const GroupAnalysis& g, const PlotOutcome& plots,
                          const std::string& dir) {
  if (!g.energy) return;
  const GroupEnergy& e = *g.energy;
  out << "### Energy\n\n";
  embed_plot(out, plots, dir, "energy_" + g.id, "energy per sample vs batch size");
  embed_plot(out, plots, dir, "power_" + g.id, "average power vs batch size");
  write_method(out, g, e);
  if (!e.low_confidence.empty()) {
    out << "**Low-confidence windows:** batch size(s) " << describe_sizes(e.low_confidence, g)
        << " were read over less than " << significant(kMinUpdatesPerWindow, 2) << " updates of the source";
    if (e.resolution_ms) out << " (" << significant(kMinUpdatesPerWindow * *e.resolution_ms, 3) << " ms)";
    out << "; they are shown but not used for the most efficient size.\n\n";
  }
  write_throttling(out, e);
  write_table(out, g, e);
}

void write_energy_terminal(std::ostream& out, const GroupAnalysis& g) {
  if (!g.energy) return;
  if (!g.energy->most_efficient) {
    out << "  most efficient: unknown, no batch size has a trusted energy window and enough steps\n";
    return;
  }
  const EnergyChoice& best = *g.energy->most_efficient;
  out << "  most efficient: batch " << best.batch_size << " at " << significant(best.samples_per_j)
      << " samples/J";
  if (const auto& idle = g.energy->most_efficient_above_idle)
    out << "; above idle: batch " << idle->batch_size << " at " << significant(idle->samples_per_j)
        << " samples/J";
  out << "\n";
}

}  // namespace batchscope
