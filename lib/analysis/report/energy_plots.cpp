#include "lib/analysis/report/energy_plots.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace batchscope {
namespace {

double or_nan(const std::optional<double>& v) { return v ? *v : std::nan(""); }

// The points a curve can be drawn through: those with energy and the value on the y axis.
std::vector<const PointStats*> with_value(const GroupAnalysis& g,
                                          std::optional<double> PointEnergyStats::*field) {
  std::vector<const PointStats*> out;
  for (const PointStats& p : g.points) {
    if (p.energy && ((*p.energy).*field).has_value()) out.push_back(&p);
  }
  return out;
}

// A label with a dot at a chosen point, on the side of the plot with more room; its box is opaque
// because the curves pass close to their own best point.
std::string mark(const std::vector<const PointStats*>& points, int64_t batch, double y,
                 const std::string& text, const char* colour, int lift) {
  const bool right_half = in_right_half(points.front()->batch_size, points.back()->batch_size, batch);
  const std::string offset = std::to_string(lift);
  return "set label " + gp_string(text) + " at first " + std::to_string(batch) + ", first " + gp_number(y) +
         (right_half ? " right offset character -1," + offset : " left offset character 1," + offset) +
         " boxed front tc rgb '" + colour + "' point pt 7 ps 2.2 lc rgb '" + colour + "'\n";
}

std::optional<PlotScript> energy_plot(const GroupAnalysis& g) {
  const std::vector<const PointStats*> points = with_value(g, &PointEnergyStats::j_per_sample);
  if (points.empty()) return std::nullopt;
  PlotScript plot{"energy_" + g.id, "# batch_size j_per_sample j_per_sample_above_idle not_used\n", ""};
  bool above_idle = false, not_used = false;
  for (const PointStats* p : points) {
    const PointEnergyStats& e = *p->energy;
    const bool unused = e.low_confidence || p->too_few_samples;
    above_idle = above_idle || e.j_per_sample_above_idle.has_value();
    not_used = not_used || unused;
    plot.data += std::to_string(p->batch_size) + " " + gp_number(*e.j_per_sample) + " " +
                 gp_number(or_nan(e.j_per_sample_above_idle)) + " " + (unused ? "1" : "0") + "\n";
  }
  std::string& body = plot.body;
  body += "set title " + gp_string(g.label) + "\n";
  body += "set ylabel 'energy per sample (J)'\n";
  body += "set yrange [0:*]\n";
  // Energy per sample falls as a larger batch spreads the fixed costs: the upper right is usually free.
  body += "set key right top opaque\n";
  body += x_range(points.front()->batch_size, points.back()->batch_size);
  body += "set style textbox opaque noborder\n";
  if (const auto& best = g.energy->most_efficient; best && best->j_per_sample) {
    body += mark(points, best->batch_size, *best->j_per_sample,
                 "most efficient: " + std::to_string(best->batch_size) + " (" +
                     gp_number(best->samples_per_j, 3) + " samples/J)",
                 "#d62728", 1);
  }
  if (const auto& best = g.energy->most_efficient_above_idle; above_idle && best && best->j_per_sample) {
    body += mark(points, best->batch_size, *best->j_per_sample,
                 "above idle: " + std::to_string(best->batch_size) + " (" +
                     gp_number(best->samples_per_j, 3) + " samples/J)",
                 "#2ca02c", -1);
  }
  std::vector<std::string> items = {
      gp_string(plot.name + ".dat") +
      " using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#1f77b4' title 'J/sample'"};
  if (above_idle) {
    items.push_back(
        "'' using 1:3 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#2ca02c' title 'J/sample above idle'");
  }
  if (not_used) {
    items.push_back(
        "'' using 1:($4 != 0 ? $2 : NaN) with points pt 6 ps 1.8 lw 1.5 lc rgb '#ff7f0e' "
        "title 'not used: window too short or too few steps'");
  }
  body += join_plot(items);
  return plot;
}

std::optional<PlotScript> power_plot(const GroupAnalysis& g) {
  const std::vector<const PointStats*> points = with_value(g, &PointEnergyStats::avg_power_w);
  if (points.empty()) return std::nullopt;
  PlotScript plot{"power_" + g.id, "# batch_size avg_power_w idle_power_w\n", ""};
  bool idle = false;
  for (const PointStats* p : points) {
    const PointEnergyStats& e = *p->energy;
    idle = idle || e.idle_power_w.has_value();
    plot.data += std::to_string(p->batch_size) + " " + gp_number(*e.avg_power_w) + " " +
                 gp_number(or_nan(e.idle_power_w)) + "\n";
  }
  std::string& body = plot.body;
  body += "set title " + gp_string(g.label) + "\n";
  body += "set ylabel 'average power over the window (W)'\n";
  body += "set yrange [0:*]\n";
  // Power rises with the batch size towards the device's limit: the lower right is free.
  body += "set key right bottom opaque\n";
  body += x_range(points.front()->batch_size, points.back()->batch_size);
  std::vector<std::string> items = {
      gp_string(plot.name + ".dat") +
      " using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#9467bd' title 'average power'"};
  if (idle) items.push_back("'' using 1:3 with lines dt 2 lw 1.5 lc rgb '#555555' title 'idle'");
  body += join_plot(items);
  return plot;
}

PlotScript energy_all_plot(const std::vector<const GroupAnalysis*>& groups) {
  std::vector<PlotSeries> series;
  for (const GroupAnalysis* g : groups) {
    PlotSeries& line = series.emplace_back(PlotSeries{g->label, {}});
    for (const PointStats* p : with_value(*g, &PointEnergyStats::j_per_sample))
      line.points.emplace_back(p->batch_size, *p->energy->j_per_sample);
  }
  return all_groups_plot("energy_all", "Energy per sample of every group", "energy per sample (J)",
                         "j_per_sample", series);
}

// Samples/J over the baseline's per compared group with energy, one index block each (batch_size ratio
// ratio_above_idle), and above idle dashed where both sides measured an idle baseline.
std::optional<PlotScript> energy_ratio_plot(const Comparison& c) {
  PlotScript plot{c.id + "_energy", "", ""};
  std::vector<std::string> items;
  std::optional<int64_t> first, last;
  int block = 0;
  for (const SpeedupCurve& s : c.curves) {
    if (!s.energy) continue;
    const std::vector<EnergyRatioPoint>& points = s.energy->points;
    first = std::min(first.value_or(points.front().batch_size), points.front().batch_size);
    last = std::max(last.value_or(points.back().batch_size), points.back().batch_size);
    if (block > 0) plot.data += "\n\n";  // two blank lines start a new gnuplot index block
    plot.data += "# " + one_line(s.label) + "\n# batch_size ratio ratio_above_idle\n";
    bool above_idle = false;
    for (const EnergyRatioPoint& p : points) {
      above_idle = above_idle || p.ratio_above_idle.has_value();
      plot.data += std::to_string(p.batch_size) + " " + gp_number(p.ratio) + " " +
                   gp_number(or_nan(p.ratio_above_idle)) + "\n";
    }
    const std::string source = (items.empty() ? gp_string(plot.name + ".dat") : std::string("''")) +
                               " index " + std::to_string(block);
    items.push_back(source + " using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc " + std::to_string(block + 1) +
                    " title " + gp_string(s.label));
    if (above_idle) {
      items.push_back("'' index " + std::to_string(block) +
                      " using 1:3 with linespoints dt 2 lw 1.5 pt 6 ps 0.8 lc " + std::to_string(block + 1) +
                      " title " + gp_string(s.label + " above idle"));
    }
    ++block;
  }
  if (items.empty()) return std::nullopt;
  finish_baseline_plot(plot, std::move(items), "Samples per joule relative to " + c.baseline_label + " — " + c.workload,
                       "samples/J over the baseline (×)", *first, *last);
  return plot;
}

}  // namespace

std::vector<PlotScript> energy_plots(const Analysis& analysis) {
  std::vector<PlotScript> plots;
  std::vector<const GroupAnalysis*> drawn;
  for (const GroupAnalysis& g : analysis.groups) {
    if (!g.energy) continue;
    if (auto plot = energy_plot(g)) {
      plots.push_back(std::move(*plot));
      drawn.push_back(&g);
    }
    if (auto plot = power_plot(g)) plots.push_back(std::move(*plot));
  }
  if (drawn.size() >= 2) plots.push_back(energy_all_plot(drawn));
  for (const Comparison& c : analysis.comparisons) {
    if (auto plot = energy_ratio_plot(c)) plots.push_back(std::move(*plot));
  }
  return plots;
}

}  // namespace batchscope
