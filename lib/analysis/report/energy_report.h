#pragma once

#include <ostream>
#include <string>

#include "lib/analysis/analysis.h"
#include "lib/analysis/report/plots.h"

namespace batchscope {

// The lines beside the highest throughput in a group's "Best batch sizes": the most energy-efficient
// batch size, with and without the idle draw. Nothing for a group without energy.
void write_energy_bests(std::ostream& out, const GroupAnalysis& g);

// The summary table's cells for the most efficient batch size and its samples/J, "–" where unknown.
std::string energy_summary_cells(const GroupAnalysis& g);

// The "Energy" part of a group in report.md: its plots, how the energy was read, the windows too short
// to trust, throttling, and a table per batch size. Nothing for a group without energy.
void write_energy_section(std::ostream& out, const GroupAnalysis& g, const PlotOutcome& plots,
                          const std::string& plot_dir);

// The terminal summary's line for the most efficient batch size, where it is known.
void write_energy_terminal(std::ostream& out, const GroupAnalysis& g);

// A comparison's energy part in report.md: per compared group its median samples/J ratio over the
// baseline and both sides' most efficient sizes, then the ratio per batch size. Nothing where no
// compared group has energy in common with the baseline.
void write_energy_comparison(std::ostream& out, const Comparison& c);

// The terminal summary's line for a compared group's median samples/J ratio, where there is one.
void write_energy_ratio_terminal(std::ostream& out, const Comparison& c, const SpeedupCurve& s);

}  // namespace batchscope
