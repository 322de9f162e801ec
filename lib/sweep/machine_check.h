#pragma once

#include <map>
#include <memory>
#include <string>

#include "data/datasets.h"
#include "lib/config/config.h"

namespace batchscope {

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
