#pragma once

// Internal to lib/: the pieces of training that the device comparison shares with train_model.
#include <torch/torch.h>

#include <memory>
#include <string>

#include "data/datasets.h"
#include "lib/records/records.h"
#include "lib/training/training.h"
#include "models/network.h"
#include "models/registry.h"

namespace batchscope::training_parts {

inline const models::SampleShape kInput = {1, 28, 28};
inline constexpr int64_t kClasses = 10;
inline constexpr const char* kJsonlName = "train.jsonl";
inline constexpr const char* kLatestWeights = "checkpoint.pt";
inline constexpr const char* kCheckpointInfo = "checkpoint.json";
// The run record's dropout_masks where TrainingOptions::device_independent is set, and where it is not.
inline constexpr const char* kMasksOnHost = "drawn on the host from the seed";
inline constexpr const char* kMasksOnDevice = "the device's generator";

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

// The loss and accuracy of the model on a test split, in batches of batch_size (lib/training/evaluation.cpp).
Evaluation evaluate(models::Network& model, const data::Dataset& test, int64_t batch_size,
                    const torch::Device& device);

// Checkpoint files (lib/training/checkpoint.cpp), each written beside and renamed into place:
// checkpoint_epochN.pt, then checkpoint.pt and checkpoint.json (info with the epoch) for the latest;
// returns the first.
std::string write_checkpoint(torch::nn::Module& model, const std::string& dir, int epoch, Json info);

}  // namespace batchscope::training_parts
