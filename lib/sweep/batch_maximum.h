#pragma once

#include <string>

#include "lib/config/config.h"

namespace batchscope {

// Fills in the batch sizes of every experiment whose batch runs up to the largest size that fits
// (batch: 1:max): from the run record already in out_dir when the sweep is being resumed, so that a
// resumed sweep keeps its sizes, else by searching for that size on the experiment's device (see
// lib/sweep/max_batch.h), at most the training images of a real dataset. Throws UserError when not even
// the first size fits. The config must be resolved for this machine.
SweepConfig resolve_batch_maximum(const SweepConfig& config, const std::string& out_dir);

}  // namespace batchscope
