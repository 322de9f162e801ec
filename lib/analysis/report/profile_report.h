#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "lib/analysis/analysis.h"
#include "lib/analysis/report/gnuplot_script.h"
#include "lib/analysis/report/plots.h"

namespace batchscope {

// Per profiled group, the time of its largest layers against batch size, stacked ("layers_<id>").
std::vector<PlotScript> profile_plots(const Analysis& analysis);

// "Where the time goes": the per-layer table at a few batch sizes, the cause of each jump and drop, and
// the convolution and linear layers' TFLOP/s, for a group profiled by its sweep.
void write_profile_section(std::ostream& out, const GroupAnalysis& g, const PlotOutcome& plots,
                           const std::string& plot_dir);

// The jumps the tile/wave model predicts beside the measured ones, with their agreement.
void write_prediction(std::ostream& out, const GroupAnalysis& g);

// Whether the jumps survive with the data on the device, for each pair of sweeps with and without the
// copy timed.
void write_transfer_verdicts(std::ostream& out, const Analysis& analysis);

}  // namespace batchscope
