#pragma once

#include <ostream>
#include <string>

#include "lib/analysis/analysis.h"

namespace batchscope {

// The cheapest batch size in a group's list of best sizes, where the group was priced.
void write_cost_best(std::ostream& out, const GroupAnalysis& g);
// The same as a line of the terminal summary.
void write_cost_terminal(std::ostream& out, const GroupAnalysis& g);

// The batch size of least predicted time to an accuracy, where analyze was given a noise scale, in the
// group's list of best sizes and as a line of the terminal summary.
void write_time_to_accuracy_best(std::ostream& out, const GroupAnalysis& g);
void write_time_to_accuracy_terminal(std::ostream& out, const GroupAnalysis& g);

// "What it costs": every priced group's cheapest batch size with $ per million samples and per epoch,
// beside its fastest and most energy-efficient sizes, cheapest group first, with each group's cost
// against the cheapest.
void write_cost_section(std::ostream& out, const Analysis& analysis);

}  // namespace batchscope
