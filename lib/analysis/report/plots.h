#pragma once

#include <string>
#include <vector>

#include "lib/analysis/analysis.h"
#include "lib/analysis/report/gnuplot_script.h"

namespace batchscope {

struct PlotOptions {
  std::string gnuplot = "gnuplot";  // program name (looked up on PATH) or path
};

struct PlotOutcome {
  bool made = false;
  std::string skipped_reason;         // why no plots were made, when made is false
  std::vector<std::string> files;     // the PNG and SVG files written, relative to the plot directory
  int plots = 0;                      // the plots drawn (each is a PNG and an SVG)
  std::vector<std::string> removed;   // files of plots an earlier analysis drew there and this one does not
  std::vector<std::string> warnings;  // e.g. a gnuplot run that failed for one plot
};

// Writes, into dir (created if missing), per group: step time vs batch size with the p10–p90 band,
// the trend line and the jumps marked ("<id>_time"), and samples/s vs batch size ("<id>_throughput");
// per comparison: speedup vs batch size ("<id>_speedup"); and, where the logs carry energy, the plots
// of energy_plots.h; each as .png and .svg, with the .dat and .gp files gnuplot ran on kept beside them.
// The files of plots that an earlier analysis into the same directory drew and this one does not are
// removed, so that the directory holds this analysis's plots only. Without gnuplot (or with nothing to
// plot) nothing is drawn, an earlier analysis's plots are removed all the same, and the reason is given.
PlotOutcome write_plots(const Analysis& analysis, const std::string& dir, const PlotOptions& options = {});

// Removes every plot file (.png, .svg, .gp, .dat) an earlier analysis drew into dir, where dir exists, for
// an analysis that draws none (analyze --no-plots); returns their names.
std::vector<std::string> remove_plot_files(const std::string& dir);

// Draws the given figures into dir (created if missing), each as .png and .svg beside its .dat and .gp
// files, and removes nothing else; without gnuplot the .dat and .gp files alone are written (gnuplot -d
// NAME.gp in dir draws them later), and the reason is given.
PlotOutcome draw_plots(const std::vector<PlotScript>& plots, const std::string& dir,
                       const PlotOptions& options = {});

}  // namespace batchscope
