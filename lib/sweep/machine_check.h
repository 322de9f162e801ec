#pragma once

#include <map>
#include <memory>
#include <string>

#include "data/datasets.h"
#include "lib/config/config.h"

namespace batchscope {

// Checks what no machine changes: the model takes the input, no batch size or micro-batch is below what
// the model trains (batch norm's one value per channel), channels-last has an image input. Throws
// UserError naming the file and line. sweep --plan and submit check this much; a sweep checks it too.
void check_experiment_settings(const ExperimentConfig& e);
void check_sweep_settings(const SweepConfig& config);

// Resolves each experiment's device for this machine ("auto" -> cuda:0 where a GPU is visible, else
// cpu; "cuda" -> cuda:0) and checks what only this machine can answer: the device exists, the
// precision is available there, the model accepts the input shape, the dataset is where it is looked
// for. Throws UserError naming the file and line.
SweepConfig resolve_for_machine(const SweepConfig& config);

// The training split of every dataset the experiments use, read once before anything is written.
// Throws UserError for a batch size larger than its dataset's training images.
using LoadedData = std::map<std::string, std::shared_ptr<data::DatasetSplits>>;
LoadedData load_data(const SweepConfig& config);

}  // namespace batchscope
