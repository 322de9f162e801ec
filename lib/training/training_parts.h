#pragma once

// Internal to lib/: the pieces of training that the device comparison shares with train_model.
#include <torch/torch.h>

#include <memory>
#include <string>

#include "data/datasets.h"
#include "lib/records/records.h"
#include "lib/training/training.h"
#include "models/network.h"

namespace batchscope::training_parts {

struct LoadedData {
  data::DatasetLocation location;
  data::DatasetSplits splits;
};

// The registered model for 1x28x28 inputs of 10 classes; UserError when it is unknown or cannot take them.
std::shared_ptr<models::Network> build_network(const std::string& name);
// Refuses a directory that holds a complete result unless force is set.
void check_output_dir(const std::string& dir, bool force);
LoadedData load_data(const std::string& spec, int64_t limit_train, int64_t limit_test);
void check_options(const TrainingOptions& o);
TrainingOutcome train_on(const TrainingOptions& o, const std::string& device_name, const LoadedData& data);

}  // namespace batchscope::training_parts
