#pragma once

// Internal to lib/: the pieces of training that the device comparison shares with train_model.
#include <torch/torch.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/datasets.h"
#include "lib/records/records.h"
#include "lib/timing/loss_scaler.h"
#include "lib/training/training.h"
#include "models/network.h"
#include "models/registry.h"

namespace batchscope::training_parts {

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

// The model `name` for the images of `data`; a model that cannot take them is refused as the mistake of
// `source`: the command line, or a checkpoint's checkpoint.json.
std::shared_ptr<models::Network> build_network(const std::string& name, const data::DatasetKind& data,
                                               const std::string& source = "command line");
// What an earlier session left in a training output directory (its train.jsonl).
struct EarlierRun {
  enum class State { None, Interrupted, Complete };
  State state = State::None;
  std::string jsonl;
  Json run;                         // its run record
  Json config;  // the options it trains with: its run record's, or the last resume record's
  int config_line = 1;              // the line of the record `config` is read from
  Json memory_limits;               // memory_limit_bytes of the last session (run or resume record), or null
  std::vector<EpochResult> epochs;  // its complete epochs, from 1
  std::uintmax_t complete_bytes = 0;
  bool truncated_tail = false;  // a write cut short, after complete_bytes
};
// What lib/training/train_log.cpp keeps: train.jsonl's epoch records and what an earlier session left.
// "checkpoint*.pt", "resume_epochN.pt", their ".partial" copies, train.jsonl and checkpoint.json: the files
// a training run writes.
bool written_by_training(const std::filesystem::path& file);
// An epoch's record as train.jsonl holds it.
Json epoch_record(const EpochResult& r);
// Refuses an earlier session's run whose options are not `config`'s, naming the first difference; its
// epoch count may differ where o goes on with it.
void check_same_options(const EarlierRun& earlier, const TrainingOptions& o, const Json& config);
// Whether a run of these options goes on from what an earlier session left: its epochs, or a complete run.
bool goes_on_from(const EarlierRun& earlier);
// --chunk auto where an earlier session's run goes on: its chunk, so that it goes on as it began.
TrainingOptions with_earlier_chunk(const TrainingOptions& options, const EarlierRun& earlier);
// Reads dir/train.jsonl strictly; a file that is not a training run's, or a damaged one, is a UserError
// naming the file and line.
EarlierRun read_earlier_run(const std::string& dir);
// Refuses a directory that holds a complete result unless o.force or o.reuse_complete is set, or o asks
// for more epochs than the complete run trained (it goes on); touches nothing.
void check_output_dir(const TrainingOptions& o);
// Whether the earlier run serves o though o gives another epoch count: a stopped run given no fewer
// epochs than it trained, a complete one given more, or one that reached o's target given at least the
// epochs it took (its numbers are then those of a run given o's count from the start).
bool serves_other_epochs(const EarlierRun& earlier, const TrainingOptions& o);
// Whether o trains on after such a run's epochs: all but the complete run that reached the target.
bool goes_on_with_other_epochs(const EarlierRun& earlier, const TrainingOptions& o);
LoadedData load_data(const std::string& spec, int64_t limit_train, int64_t limit_test);
void check_options(const TrainingOptions& o);
TrainingOutcome train_on(const TrainingOptions& o, const std::string& device_name, const LoadedData& data);
// Refuses, as train_on would when it starts, an earlier run in o.out_dir of other options than o's on
// this device and data, naming the first difference (a study checks every run before it trains one).
void check_earlier_options(const TrainingOptions& o, const std::string& device_name, const LoadedData& data);

// The loss and accuracy of the model on a test split, in batches of batch_size, the forward pass under
// autocast in fp16 or bf16, each batch NHWC where channels_last (lib/training/evaluation.cpp).
Evaluation evaluate(models::Network& model, const data::Dataset& test, int64_t batch_size,
                    const torch::Device& device, Precision precision = Precision::FP32,
                    bool channels_last = false);

// Checkpoint files (lib/training/checkpoint.cpp), each written beside and renamed into place:
// checkpoint_epochN.pt, then checkpoint.pt and checkpoint.json (info with the epoch) for the latest;
// returns the first.
std::string write_checkpoint(torch::nn::Module& model, const std::string& dir, int epoch, Json info);

// What the epoch after `epoch` needs besides the weights, so that a run that goes on from it trains as
// one that never stopped: the optimizer's state (momentum, Adam's moments) and the random generators
// (the CPU's, the device's, and the host's dropout masks where they are drawn there), and the loss
// scaler's scale and count of clean steps where the loss is scaled.
struct TrainerState {
  torch::optim::Optimizer* optimizer = nullptr;
  torch::Device device = torch::kCPU;
  std::optional<at::Generator> masks;
  LossScaler* scaler = nullptr;
};
// The states of a TrainerState's generators: the CPU's, the device's (a GPU's only) and the host's masks
// (where drawn there); undefined where it has no such generator. What a resume file holds of them.
struct GeneratorStates {
  torch::Tensor cpu, device, masks;
};
GeneratorStates capture_generators(const TrainerState& state);
void restore_generators(const TrainerState& state, const GeneratorStates& states);
// The generators as they were when made, put back when it ends: what runs between epochs (the noise
// scale's batches) leaves training's draws as they would have been without it.
class KeptGenerators {
 public:
  explicit KeptGenerators(const TrainerState& state);
  ~KeptGenerators();
  KeptGenerators(const KeptGenerators&) = delete;
  KeptGenerators& operator=(const KeptGenerators&) = delete;

 private:
  const TrainerState state_;
  const GeneratorStates kept_;
};
// One untimed forward and backward pass over the first batch at the run's shapes, before the first epoch,
// so that the libraries' first-call costs are not in its time; the weights, batch-norm statistics,
// gradients (none) and random generators are left as they were.
void warm_up_libraries(models::Network& model, std::vector<torch::Tensor>& parameters,
                       const data::Dataset& train, const TrainingOptions& o, const TrainerState& state);
// resume_epochN.pt in dir, written beside and renamed into place; returns its path.
std::string write_resume_state(const std::string& dir, int epoch, const TrainerState& state);
// Loads a resume_epochN.pt into the optimizer and generators; a missing or unreadable file is a
// UserError naming it.
void read_resume_state(const std::string& path, const TrainerState& state);
std::string resume_state_name(int epoch);
// Loads a checkpoint's weights into the model, on device; an unreadable file is a UserError naming it.
void load_weights(models::Network& model, const std::string& path, const std::string& model_name,
                  const torch::Device& device);

}  // namespace batchscope::training_parts
