#pragma once

#include <ostream>
#include <string>

#include "lib/analysis/analysis.h"
#include "lib/analysis/report/plots.h"
#include "lib/records/records.h"

namespace batchscope {

// Numbers to a fixed count of significant digits without exponents: 0.01234, 12.34, 1234.
std::string significant(double value, int digits = 4);

// The PNG of a plot with a link to its SVG, where the plot was drawn; nothing otherwise.
void embed_plot(std::ostream& out, const PlotOutcome& plots, const std::string& plot_dir,
                const std::string& stem, const std::string& alt);

// report.md: per group the trend, the jumps, the periodicity verdict and the best batch sizes, then the
// comparisons, the environment of each run and every warning. plot_dir is the plots' directory as seen
// from the report.
void write_report(std::ostream& out, const Analysis& analysis, const PlotOutcome& plots,
                  const std::string& plot_dir);

// The same in a few lines per group, for the terminal.
void write_terminal_summary(std::ostream& out, const Analysis& analysis);

}  // namespace batchscope
