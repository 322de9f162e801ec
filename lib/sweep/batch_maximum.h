#pragma once

#include <string>

#include "lib/config/config.h"
#include "lib/sweep/sweep_runner.h"

namespace batchscope {

// Fills in the batch sizes of every experiment whose batch runs up to the largest size that fits
// (batch: 1:max): from the run record already in sweep.out_dir when the sweep is being resumed, so that a
// resumed sweep keeps its sizes, else by searching for that size on the experiment's device (see
// lib/sweep/max_batch.h), at most the training images of a real dataset. The search is kept in
// OUT/maxbatch/EXPERIMENT.jsonl (lib/sweep/kept_search.h): one stopped on request (sweep.stop_requested,
// between two tries: MaxBatchStopped) goes on from its tries, and one that ended before the sweep began
// gives its answer without a try. Throws UserError when not even the first size fits. The config must
// be resolved for this machine.
SweepConfig resolve_batch_maximum(const SweepConfig& config, const SweepOptions& sweep);

// Where a sweep keeps the search for an experiment's largest batch size.
std::string search_log_path(const std::string& out_dir, const std::string& experiment);

}  // namespace batchscope
