#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace batchscope {

// One figure: its data file and the gnuplot commands that draw it, shared by every kind of plot.
struct PlotScript {
  std::string name;  // file stem inside the plot directory
  std::string data;
  std::string body;  // settings and the plot command, without terminals
};

// Numbers for data files and scripts; "NaN" (a gap for gnuplot) where not finite.
std::string gp_number(double value, int precision = 12, bool fixed = false);

// A gnuplot single-quoted string that prints as written.
std::string gp_string(const std::string& text);

// "plot a, b, c" with one item per line.
std::string join_plot(const std::vector<std::string>& items);

// The x range of batch sizes first..last, on a log scale when they span more than 200x.
std::string x_range(int64_t first, int64_t last);
// Whether x lies in the right half of the axis x_range(first, last) draws (the geometric middle where it
// is logarithmic): a label there is set to the left of its point, so that it stays inside the plot.
bool in_right_half(int64_t first, int64_t last, int64_t x);

// One labelled line of (batch size, value) points.
struct PlotSeries {
  std::string label;
  std::vector<std::pair<int64_t, double>> points;  // ascending batch size, at least one
};

// Every series on one figure (throughput_all, energy_all): one data block per series, the key below,
// and a log y axis where the values span more than 20x. `column` names the value in the data file.
PlotScript all_groups_plot(const std::string& name, const std::string& title, const std::string& ylabel,
                           const std::string& column, const std::vector<PlotSeries>& series);

// Ends a plot of ratios against a baseline: the dashed 1x line after the items, the title, the y label,
// the key below and the x range of first..last.
void finish_baseline_plot(PlotScript& plot, std::vector<std::string> items, const std::string& title,
                          const std::string& ylabel, int64_t first, int64_t last);

// Line breaks become spaces: labels go into comments and titles of one line.
std::string one_line(std::string text);

}  // namespace batchscope
