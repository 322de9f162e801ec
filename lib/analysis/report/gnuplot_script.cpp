#include "lib/analysis/report/gnuplot_script.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <locale>
#include <sstream>

namespace batchscope {

// Data files and scripts must read the same in every locale: gnuplot always expects a decimal point.
std::string gp_number(double value, int precision, bool fixed) {
  if (!std::isfinite(value)) return "NaN";
  std::ostringstream out;
  out.imbue(std::locale::classic());
  if (fixed) out << std::fixed;
  out << std::setprecision(precision) << value;
  return out.str();
}

// Nothing inside a single-quoted gnuplot string is an escape except '' for a quote. Enhanced text
// (@ _ ^ & {}) is switched off for the whole terminal, so labels print as written.
std::string gp_string(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "''";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string join_plot(const std::vector<std::string>& items) {
  std::string out = "plot ";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", \\\n     " : "") + items[i];
  return out + "\n";
}

namespace {
// Batch sizes over more than this ratio are drawn on a log scale.
constexpr double kLogAxisRatio = 200;
}  // namespace

bool in_right_half(int64_t first, int64_t last, int64_t x) {
  const double lo = static_cast<double>(first), hi = static_cast<double>(last);
  const double middle = lo >= 1 && hi / lo > kLogAxisRatio ? std::sqrt(lo * hi) : 0.5 * (lo + hi);
  return static_cast<double>(x) > middle;
}

std::string x_range(int64_t first, int64_t last) {
  double lo = static_cast<double>(first);
  double hi = static_cast<double>(last);
  if (lo >= 1 && hi / lo > kLogAxisRatio) {
    // Batch sizes on a log scale (1 .. 60000, say): a linear axis would crowd the small ones together.
    return "set logscale x\nset xrange [" + gp_number(lo / 1.2) + ":" + gp_number(hi * 1.2) + "]\n";
  }
  double pad = std::max(0.5, 0.02 * (hi - lo));
  return "set xrange [" + gp_number(lo - pad) + ":" + gp_number(hi + pad) + "]\n";
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
}

PlotScript all_groups_plot(const std::string& name, const std::string& title, const std::string& ylabel,
                           const std::string& column, const std::vector<PlotSeries>& series) {
  PlotScript plot{name, "", ""};
  std::vector<std::string> items;
  double lowest = 0, highest = 0;
  int64_t first = series.front().points.front().first, last = first;
  for (const PlotSeries& s : series) {
    first = std::min(first, s.points.front().first);
    last = std::max(last, s.points.back().first);
    if (!items.empty()) plot.data += "\n\n";  // two blank lines start a new gnuplot index block
    plot.data += "# " + one_line(s.label) + "\n# batch_size " + column + "\n";
    for (const auto& [batch, value] : s.points) {
      plot.data += std::to_string(batch) + " " + gp_number(value) + "\n";
      if (value > 0 && std::isfinite(value)) {
        lowest = lowest > 0 ? std::min(lowest, value) : value;
        highest = std::max(highest, value);
      }
    }
    items.push_back((items.empty() ? gp_string(name + ".dat") : std::string("''")) + " index " +
                    std::to_string(items.size()) + " using 1:2 with linespoints lw 2 pt 7 ps 0.6 title " +
                    gp_string(s.label));
  }
  plot.body += "set title " + gp_string(title) + "\n";
  plot.body += "set ylabel " + gp_string(ylabel) + "\n";
  plot.body += "set key below\n";  // gnuplot sizes the bottom margin to the key's rows
  plot.body += x_range(first, last);
  if (lowest > 0 && highest / lowest > 20) {
    // A log axis of the values' own span: gnuplot's autoscale would round it out to whole decades,
    // empty ones included.
    plot.body += "set logscale y\nset yrange [" + gp_number(lowest / 1.3) + ":" + gp_number(highest * 1.3) + "]\n";
  }
  plot.body += join_plot(items);
  return plot;
}

void finish_baseline_plot(PlotScript& plot, std::vector<std::string> items, const std::string& title,
                          const std::string& ylabel, int64_t first, int64_t last) {
  items.push_back("1 with lines dt 2 lw 1.5 lc rgb '#555555' title 'baseline (1×)'");
  plot.body += "set title " + gp_string(title) + "\n";
  plot.body += "set ylabel " + gp_string(ylabel) + "\n";
  plot.body += "set key below\n";  // gnuplot sizes the bottom margin to the key's rows
  // A speedup or a ratio is never below zero: the axis starts there.
  plot.body += "set yrange [0:*]\n";
  plot.body += x_range(first, last);
  plot.body += join_plot(items);
}

}  // namespace batchscope
