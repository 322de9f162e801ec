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
// size it puts within the device's memory and the common GPU sizes, against the first size that ran out
// of memory where the sweep met one, and why those are upper bounds.
void write_memory_section(std::ostream& out, const GroupAnalysis& g, const PlotOutcome& plots,
                          const std::string& plot_dir);

// The terminal summary's line: the line and its reach in the device's own memory.
void write_memory_terminal(std::ostream& out, const GroupAnalysis& g);

// "<id>_memory": the peaks against the batch size, with the line.
std::optional<PlotScript> memory_plot(const GroupAnalysis& g);

// analysis.json's "memory" object of a group.
Json memory_json(const MemoryFit& fit);

}  // namespace batchscope
