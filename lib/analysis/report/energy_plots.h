#pragma once

#include <vector>

#include "lib/analysis/analysis.h"
#include "lib/analysis/report/gnuplot_script.h"

namespace batchscope {

// The energy plots, for the groups whose logs carry energy: per group J/sample vs batch size (and above
// idle where an idle baseline was measured) with the most efficient size marked ("energy_<id>"), and
// average power with the idle power ("power_<id>"); with two or more such groups, the J/sample of all
// of them ("energy_all"); per comparison with energy on both sides, the samples/J ratio over the
// baseline ("<comparison id>_energy"). Empty where no group has energy.
std::vector<PlotScript> energy_plots(const Analysis& analysis);

}  // namespace batchscope
