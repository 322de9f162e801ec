#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "lib/analysis/analysis.h"
#include "lib/analysis/report/gnuplot_script.h"
#include "lib/analysis/report/plots.h"
#include "lib/records/jsonl.h"

namespace batchscope {

// What analyze writes of a group's memory line (memory_fit.h); each writes nothing for a group without.

// report.md's "Memory" paragraph: its plot, the line, how close the peaks lie to it, the largest batch
// size it puts within the device's memory and the common GPU sizes, where the peak steps off the line
// and which jumps and drops of the step time came with such a step, the first size that ran out of
// memory where the sweep met one, and why the reach is an upper bound.
void write_memory_section(std::ostream& out, const GroupAnalysis& g, const PlotOutcome& plots,
                          const std::string& plot_dir);

// The terminal summary's line: the line, its reach in the device's own memory, and the steps off it.
void write_memory_terminal(std::ostream& out, const GroupAnalysis& g);

// How the peak moved beyond the line across a jump or drop of the step time: "+0.4 MiB", or "−433 MiB, a
// step" where it passed the fit's step threshold; "" where a side has no peak or there is no line.
std::string memory_at_change_text(const GroupAnalysis& g, const Jump& change);

// "<id>_memory": the peaks against the batch size, with the line and each step off it marked.
std::optional<PlotScript> memory_plot(const GroupAnalysis& g);

// analysis.json's "memory" object of a group.
Json memory_json(const MemoryFit& fit);

}  // namespace batchscope
