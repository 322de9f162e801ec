#include "lib/analysis/report/plots.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <locale>
#include <optional>
#include <set>
#include <sstream>

#include "lib/analysis/report/energy_plots.h"
#include "lib/analysis/report/gnuplot_script.h"
#include "lib/analysis/report/memory_report.h"
#include "lib/analysis/report/profile_report.h"
#include "lib/common/errors.h"
#include "lib/common/program_runner.h"

namespace batchscope {
namespace {

namespace fs = std::filesystem;

const char kHowToGetGnuplot[] = "install gnuplot-nox (scripts/setup.sh does) to get plots";

// One script draws the PNG, then replots the same figure as SVG.
std::string full_script(const PlotScript& plot) {
  std::string out = "set encoding utf8\n";
  out += "set terminal pngcairo size 1000,600 noenhanced font 'sans,10'\n";
  out += "set output " + gp_string(plot.name + ".png") + "\n";
  out += "set grid\n";
  out += "set xlabel 'batch size (samples)'\n";
  // No line drawn along the top edge; none below zero at the bottom, where the axes that start at 0
  // (step time, speedup, power) would otherwise show negative room.
  out += "set offsets 0, 0, graph 0.05, 0\n";
  out += plot.body;
  out += "set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'\n";
  out += "set output " + gp_string(plot.name + ".svg") + "\n";
  out += "replot\n";
  out += "unset output\n";
  return out;
}

bool any_too_few(const std::vector<PointStats>& points) {
  return std::any_of(points.begin(), points.end(), [](const PointStats& p) { return p.too_few_samples; });
}

std::string percent_change(double pct) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out << std::fixed << std::showpos << std::setprecision(1) << pct << "%";
  return out.str();
}

PlotScript time_plot(const GroupAnalysis& group) {
  PlotScript plot{group.id + "_time",
                  "# batch_size median_ms p10_ms p90_ms too_few_samples samples micro_batched\n", ""};
  bool micro_batched = false;
  int64_t largest_whole = 0;
  for (const auto& p : group.points) {
    plot.data += std::to_string(p.batch_size) + " " + gp_number(p.median_ms) + " " + gp_number(p.p10_ms) +
                 " " + gp_number(p.p90_ms) + " " + (p.too_few_samples ? "1" : "0") + " " +
                 std::to_string(p.samples) + " " + (p.chunk ? "1" : "0") + "\n";
    micro_batched = micro_batched || p.chunk.has_value();
    if (!p.chunk) largest_whole = std::max(largest_whole, p.batch_size);
  }
  std::string& body = plot.body;
  body += "set title " + gp_string(group.label) + "\n";
  body += "set ylabel 'step time (ms)'\n";
  body += "set yrange [0:*]\n";
  // Below the plot: a key inside hid the median where a log axis puts the steep part in the lower right,
  // and the jump labels sit at the top.
  body += "set key below\n";
  body += x_range(group.points.front().batch_size, group.points.back().batch_size);
  const auto& jumps = group.jumps.jumps;
  for (size_t i = 0; i < jumps.size(); ++i) {
    const Jump& jump = jumps[i];
    // At the first batch size of the new level, where a reader looks for it (a marker between two
    // sizes would stand where nothing was measured).
    std::string x = gp_number(static_cast<double>(jump.to_batch));
    std::string text = std::to_string(jump.from_batch) + "→" + std::to_string(jump.to_batch) + " " +
                       percent_change(jump.delta_pct);
    // Staggered heights keep the labels of close jumps apart.
    std::string y = gp_number(0.95 - 0.05 * static_cast<double>(i % 3));
    body += "set arrow from first " + x + ", graph 0 to first " + x + ", graph 1 nohead dt 3 lw 1.5 " +
            "lc rgb '#d62728'\n";
    const bool right =
        in_right_half(group.points.front().batch_size, group.points.back().batch_size, jump.to_batch);
    body += "set label " + gp_string(text) + " at first " + x + ", graph " + y +
            (right ? " right offset character -0.5,0" : " left offset character 0.5,0") +
            " front tc rgb '#d62728'\n";
  }
  std::string file = gp_string(plot.name + ".dat");
  std::vector<std::string> items = {
      file + " using 1:3:4 with filledcurves fc rgb '#c6dbef' fs solid 0.7 title 'p10–p90'",
      "'' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'median'",
      "'' using 1:($5 == 0 && $7 == 0 ? $2 : NaN) with points pt 7 ps 0.9 lc rgb '#1f77b4' notitle"};
  // chunk: auto's sizes that did not fit whole: their step time follows their count of micro-batches,
  // which the trend and the jumps do not read.
  if (micro_batched) {
    items.push_back("'' using 1:($5 == 0 && $7 != 0 ? $2 : NaN) with points pt 13 ps 1.4 lc rgb '#9467bd' " +
                    std::string("title 'in micro-batches (did not fit whole)'"));
  }
  if (any_too_few(group.points)) {
    items.push_back("'' using 1:($5 != 0 ? $2 : NaN) with points pt 6 ps 1.8 lw 1.5 lc rgb '#ff7f0e' " +
                    std::string("title 'too few samples'"));
  }
  if (group.trend && std::isfinite(group.trend->intercept_ms) &&
      std::isfinite(group.trend->slope_ms_per_sample)) {
    // Over the sizes that ran whole, which it was fitted to.
    const std::string line = "(" + gp_number(group.trend->intercept_ms) + ") + (" +
                             gp_number(group.trend->slope_ms_per_sample) + ") * x";
    items.push_back(
        (micro_batched ? "(x <= " + std::to_string(largest_whole) + " ? " + line + " : NaN)" : line) +
        " with lines dt 2 lw 1.5 lc rgb '#555555' title 'trend (Theil–Sen)'");
  }
  body += join_plot(items);
  return plot;
}

PlotScript throughput_plot(const GroupAnalysis& group) {
  PlotScript plot{group.id + "_throughput", "# batch_size samples_per_s too_few_samples\n", ""};
  for (const auto& p : group.points) {
    plot.data += std::to_string(p.batch_size) + " " + gp_number(p.samples_per_s) + " " +
                 (p.too_few_samples ? "1" : "0") + "\n";
  }
  std::string& body = plot.body;
  body += "set title " + gp_string(group.label) + "\n";
  body += "set ylabel 'throughput (samples/s)'\n";
  body += "set yrange [0:*]\n";
  body += "set key left top opaque\n";
  body += x_range(group.points.front().batch_size, group.points.back().batch_size);
  if (group.fastest) {
    const BatchChoice& best = *group.fastest;
    const bool right_half =
        in_right_half(group.points.front().batch_size, group.points.back().batch_size, best.batch_size);
    std::string text = "fastest: " + std::to_string(best.batch_size) + " (" +
                       gp_number(best.samples_per_s, 1, true) + " samples/s)";
    body += "set label " + gp_string(text) + " at first " + std::to_string(best.batch_size) + ", first " +
            gp_number(best.samples_per_s) +
            (right_half ? " right offset character -1,1" : " left offset character 1,1") +
            " front tc rgb '#d62728' point pt 7 ps 2.2 lc rgb '#d62728'\n";
  }
  std::string file = gp_string(plot.name + ".dat");
  std::vector<std::string> items = {
      file + " using 1:2 with lines lw 2 lc rgb '#2ca02c' title 'samples/s'",
      "'' using 1:($3 == 0 ? $2 : NaN) with points pt 7 ps 0.9 lc rgb '#2ca02c' notitle"};
  if (any_too_few(group.points)) {
    items.push_back("'' using 1:($3 != 0 ? $2 : NaN) with points pt 6 ps 1.8 lw 1.5 lc rgb '#ff7f0e' " +
                    std::string("title 'too few samples'"));
  }
  body += join_plot(items);
  return plot;
}

// The group's TFLOP/s at each batch size under the measured peaks it is read against (analyze --peak):
// how near the roof each size runs, and where the gains of a larger batch end.
std::optional<PlotScript> rate_plot(const GroupAnalysis& group) {
  if (!group.peak || group.peak->shares.empty()) return std::nullopt;
  PlotScript plot{group.id + "_rate", "# batch_size tflops too_few_samples\n", ""};
  for (const PointStats& p : group.points) {
    if (!p.tflops) continue;
    plot.data += std::to_string(p.batch_size) + " " + gp_number(*p.tflops) + " " +
                 (p.too_few_samples ? "1" : "0") + "\n";
  }
  std::string& body = plot.body;
  body += "set title " + gp_string(group.label + ": TFLOP/s against the measured peaks") + "\n";
  // Room above the highest line for the key, so that it covers neither the rates nor a peak.
  double top = 0;
  for (const PointStats& p : group.points) top = std::max(top, p.tflops.value_or(0.0));
  for (const PeakShare& s : group.peak->shares) top = std::max(top, s.peak_tflops);
  body += "set ylabel 'TFLOP/s'\nset yrange [0:" + gp_number(1.35 * top) + "]\nset key top left\n";
  body += x_range(group.points.front().batch_size, group.points.back().batch_size);
  const std::string file = gp_string(plot.name + ".dat");
  std::vector<std::string> items = {
      file +
      " using 1:($3 == 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.8 lc rgb '#2ca02c' title 'achieved'"};
  if (any_too_few(group.points)) {
    items.push_back("'' using 1:($3 != 0 ? $2 : NaN) with points pt 6 ps 1.8 lw 1.5 lc rgb '#ff7f0e' " +
                    std::string("title 'too few samples'"));
  }
  // A dashed line per peak: the matrix product's, then the convolution's, per precision.
  constexpr const char* kPeakColours[] = {"#1f77b4", "#d62728", "#9467bd", "#8c564b"};
  for (std::size_t i = 0; i < group.peak->shares.size(); ++i) {
    const PeakShare& s = group.peak->shares[i];
    const std::string what = s.precision + (s.operation == "conv" ? " convolution" : " matrix product");
    items.push_back(gp_number(s.peak_tflops) + " with lines dt " + (s.operation == "conv" ? "2" : "4") +
                    " lw 1.5 lc rgb '" + kPeakColours[i % std::size(kPeakColours)] + "' title " +
                    gp_string(what + " peak, " + gp_number(s.peak_tflops, 4) + " TFLOP/s"));
  }
  body += join_plot(items);
  return plot;
}

// The time to an accuracy at each batch size against the least (analyze --noise-scale), beside the steps
// it takes against the fewest: where the fewer steps of a larger batch stop paying for its longer ones.
std::optional<PlotScript> time_to_accuracy_plot(const GroupAnalysis& group) {
  if (!group.time_to_accuracy || !group.time_to_accuracy->best) return std::nullopt;
  const GroupTimeToAccuracy& t = *group.time_to_accuracy;
  PlotScript plot{group.id + "_time_to_accuracy", "# batch_size relative_time steps_factor\n", ""};
  double top = 0;
  for (const PointTimeToAccuracy& p : t.points) {
    plot.data += std::to_string(p.batch_size) + " " + gp_number(p.relative_time) + " " +
                 gp_number(p.steps_factor) + "\n";
    top = std::max({top, p.relative_time, p.steps_factor});
  }
  std::string& body = plot.body;
  body += "set title " +
          gp_string(group.label + ": time to an accuracy with B_noise " + gp_number(t.noise.b_noise, 4)) +
          "\n";
  body += "set ylabel 'time and steps, each against its least (×)'\nset logscale y\nset yrange [0.9:" +
          gp_number(1.5 * top) + "]\n";
  body += "set key top center\n";
  body += x_range(t.points.front().batch_size, t.points.back().batch_size);
  body += "set label " + gp_string("least: " + std::to_string(t.best->batch_size)) + " at first " +
          std::to_string(t.best->batch_size) +
          ", first 1 left offset character 1,1 front tc rgb '#d62728' "
          "point pt 7 ps 2.2 lc rgb '#d62728'\n";
  const std::string file = gp_string(plot.name + ".dat");
  body += join_plot(
      {file + " using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#2ca02c' title 'time: steps × median "
              "step time'",
       "'' using 1:3 with lines dt 2 lw 1.5 lc rgb '#555555' title 'steps: S_min (1 + B_noise / B)'"});
  return plot;
}

std::optional<PlotScript> speedup_plot(const Comparison& comparison) {
  PlotScript plot{comparison.id + "_speedup", "", ""};
  std::vector<std::string> items;
  int64_t first = 0, last = 0;
  for (const auto& curve : comparison.curves) {
    if (curve.speedup.empty()) continue;
    first = items.empty() ? curve.speedup.front().first : std::min(first, curve.speedup.front().first);
    last = items.empty() ? curve.speedup.back().first : std::max(last, curve.speedup.back().first);
    if (!items.empty()) plot.data += "\n\n";  // two blank lines start a new gnuplot index block
    plot.data += "# " + one_line(curve.label) + "\n# batch_size speedup\n";
    for (const auto& [batch, speedup] : curve.speedup)
      plot.data += std::to_string(batch) + " " + gp_number(speedup) + "\n";
    items.push_back((items.empty() ? gp_string(plot.name + ".dat") : std::string("''")) + " index " +
                    std::to_string(items.size()) + " using 1:2 with linespoints lw 2 pt 7 ps 0.8 title " +
                    gp_string(curve.label));
  }
  if (items.empty()) return std::nullopt;
  finish_baseline_plot(plot, std::move(items), "Speedup over " + comparison.baseline_label + " — " + comparison.workload,
                       "speedup over the baseline (×)", first, last);
  return plot;
}

PlotScript throughput_all_plot(const std::vector<const GroupAnalysis*>& groups) {
  std::vector<PlotSeries> series;
  for (const GroupAnalysis* group : groups) {
    PlotSeries& line = series.emplace_back(PlotSeries{group->label, {}});
    for (const auto& p : group->points) line.points.emplace_back(p.batch_size, p.samples_per_s);
  }
  return all_groups_plot("throughput_all", "Throughput of every group", "throughput (samples/s)",
                         "samples_per_s", series);
}

bool write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

std::string first_lines(const std::string& text, size_t limit = 400) {
  std::string out = one_line(text.substr(0, limit));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (text.size() > limit) out += " …";
  return out;
}

}  // namespace

namespace {

// Every plot the analysis has: time and throughput per group, speedups, all groups together, energy.
std::vector<PlotScript> plots_of(const Analysis& analysis) {
  std::vector<PlotScript> plots;
  std::vector<const GroupAnalysis*> drawn;
  for (const auto& group : analysis.groups) {
    if (group.points.empty()) continue;
    drawn.push_back(&group);
    plots.push_back(time_plot(group));
    plots.push_back(throughput_plot(group));
    if (auto plot = rate_plot(group)) plots.push_back(std::move(*plot));
    if (auto plot = time_to_accuracy_plot(group)) plots.push_back(std::move(*plot));
    if (auto plot = memory_plot(group)) plots.push_back(std::move(*plot));
  }
  for (const auto& comparison : analysis.comparisons) {
    if (auto plot = speedup_plot(comparison)) plots.push_back(std::move(*plot));
  }
  if (drawn.size() >= 2) plots.push_back(throughput_all_plot(drawn));
  for (PlotScript& plot : energy_plots(analysis)) plots.push_back(std::move(plot));
  for (PlotScript& plot : profile_plots(analysis)) plots.push_back(std::move(plot));
  return plots;
}

}  // namespace

namespace {

// Removes from dir the files a plot writes (.png, .svg, .gp, .dat) whose plot is not among `plots`:
// those of an earlier analysis into the same directory. Returns their names.
std::vector<std::string> remove_stale_plot_files(const fs::path& dir, const std::vector<PlotScript>& plots) {
  std::set<std::string> current;
  for (const auto& plot : plots) current.insert(plot.name);
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& path = it->path();
    const std::string extension = path.extension().string();
    if (!it->is_regular_file(ec)) continue;
    if (extension != ".png" && extension != ".svg" && extension != ".gp" && extension != ".dat") continue;
    if (current.count(path.stem().string())) continue;
    std::error_code removing;
    if (fs::remove(path, removing)) removed.push_back(path.filename().string());
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace

namespace {

void make_plot_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw UserError(located(
        dir, 0, "the plot directory cannot be created" + (ec ? " (" + ec.message() + ")" : std::string()),
        "choose a plot directory you can write to"));
  }
}

// The gnuplot program; where there is none, the outcome says why.
std::optional<std::string> gnuplot_program(const PlotOptions& options, PlotOutcome& outcome) {
  std::optional<std::string> program = find_program(options.gnuplot);
  if (!program) {
    outcome.skipped_reason = options.gnuplot.find('/') == std::string::npos
                                 ? options.gnuplot + " was not found on PATH; " + kHowToGetGnuplot
                                 : options.gnuplot + " is not an executable program; " + kHowToGetGnuplot;
  }
  return program;
}

// Each plot's data and script written into dir, then drawn there as PNG and SVG where there is a
// program.
void draw(const std::vector<PlotScript>& plots, const std::string& dir,
          const std::optional<std::string>& gnuplot, PlotOutcome& outcome) {
  const fs::path base(dir);
  std::error_code ec;
  for (const auto& plot : plots) {
    std::string script = plot.name + ".gp";
    if (!write_file(base / (plot.name + ".dat"), plot.data) ||
        !write_file(base / script, full_script(plot))) {
      outcome.warnings.push_back((base / plot.name).string() + ": the plot files could not be written");
      continue;
    }
    if (!gnuplot) continue;
    const std::string& program = *gnuplot;
    std::vector<std::string> images = {plot.name + ".png", plot.name + ".svg"};
    for (const auto& image : images) fs::remove(base / image, ec);  // no stale image passes for a new one
    // Run inside the plot directory, so that the kept script reads its data by relative name and can be
    // rerun by hand; -d ignores the user's own gnuplot settings.
    const ProgramRun run = run_program(program, {"-d", script}, dir);
    if (!run.started) {
      outcome.files.clear();
      outcome.warnings.clear();
      outcome.skipped_reason = program + " could not be run: " + run.failure + "; " + kHowToGetGnuplot;
      return;
    }
    outcome.made = true;
    if (run.exit_status != 0) {
      outcome.warnings.push_back((base / script).string() + ": gnuplot failed (exit status " +
                                 std::to_string(run.exit_status) + "): " + first_lines(run.errors));
      continue;
    }
    bool drawn = false;
    for (const auto& image : images) {
      if (fs::is_regular_file(base / image, ec) && fs::file_size(base / image, ec) > 0) {
        outcome.files.push_back(image);
        drawn = true;
      } else {
        outcome.warnings.push_back((base / script).string() + ": gnuplot did not write " + image);
      }
    }
    if (drawn) ++outcome.plots;
  }
}

}  // namespace

std::vector<std::string> remove_plot_files(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  return remove_stale_plot_files(fs::path(dir), {});
}

PlotOutcome write_plots(const Analysis& analysis, const std::string& dir, const PlotOptions& options) {
  make_plot_dir(dir);
  PlotOutcome outcome;
  const std::optional<std::string> program = gnuplot_program(options, outcome);
  // Drawing nothing, this analysis leaves none of an earlier one's plots beside its report.
  if (!program) {
    outcome.removed = remove_plot_files(dir);
    return outcome;
  }
  const std::vector<PlotScript> plots = plots_of(analysis);
  if (plots.empty()) {
    outcome.skipped_reason = "there is nothing to plot: no group has a measured batch size";
    outcome.removed = remove_plot_files(dir);
    return outcome;
  }
  outcome.removed = remove_stale_plot_files(fs::path(dir), plots);
  draw(plots, dir, program, outcome);
  return outcome;
}

PlotOutcome draw_plots(const std::vector<PlotScript>& plots, const std::string& dir,
                       const PlotOptions& options) {
  make_plot_dir(dir);
  PlotOutcome outcome;
  draw(plots, dir, gnuplot_program(options, outcome), outcome);
  return outcome;
}

}  // namespace batchscope
