#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/augment.h"
#include "lib/config/config.h"
#include "lib/power/energy_meter.h"
#include "lib/power/power_source.h"
#include "lib/records/records.h"
#include "lib/training/lr_schedule.h"
#include "lib/training/noise_scale.h"

namespace batchscope {

// One training run of `batchscope train`: a model of the zoo (or a TorchScript file) trained on a dataset
// (MNIST's 1x28x28 images, CIFAR's 3x32x32) in fp32, or in mixed precision (autocast), evaluated on the
// test split after every epoch.
struct EpochResult;

// The test split's batches, unless train --eval-batch says otherwise.
constexpr int64_t kEvalBatchSize = 1000;

struct TrainingOptions {
  std::string model = "mnist_cnn";
  std::string data = "mnist";  // a dataset's name (data::dataset_kinds()) or a directory of its files
  int epochs = 3;
  int64_t batch_size = 64;
  // Gradient accumulation, as one trains a batch larger than fits: each step runs its batch as micro-batches
  // of at most this many samples (and the rest), forward and backward each with its loss weighted by its
  // share of the batch, then one optimizer step. 0, or a chunk that holds the batch: the batch whole.
  int64_t chunk = 0;
  // --chunk auto: the chunk is found before the first step (fitting_chunk.h): the largest micro-batch up
  // to the batch whose training step fits beside the batch itself, then the batch split as evenly as it
  // goes into as few micro-batches. A run that goes on takes its earlier session's chunk instead.
  bool chunk_auto = false;
  // With chunk_auto: the largest micro-batch that a search for a smaller batch of the same model and
  // options found to fit (a batch study's next sizes), where the search starts instead of at the batch
  // (no larger micro-batch fits beside a larger batch); 0: none.
  int64_t chunk_fits = 0;
  int64_t chunk_fits_batch = 0;  // the batch that search was for
  // The test split is evaluated in batches of this size; eval's default is the same, so that it
  // reproduces an epoch's numbers exactly on the same device.
  int64_t eval_batch_size = kEvalBatchSize;
  std::string device = "auto";  // cpu, cuda, cuda:N or auto (the first GPU, else the CPU)
  OptimizerConfig optimizer{OptimizerKind::Momentum};
  // How the rate moves from step to step: optimizer.lr throughout by default.
  LrSchedule lr_schedule;
  // fp16 or bf16: each step's forward pass and loss run under autocast, as torch.autocast runs them, and
  // so does the evaluation; fp16 runs on a GPU only.
  Precision precision = Precision::FP32;
  // Dynamic loss scaling (PyTorch's GradScaler) with these settings; the command makes it dynamic for
  // fp16 unless told otherwise, as a sweep does.
  LossScale loss_scale = LossScale::Off;
  LossScalerSettings loss_scaler;
  uint64_t seed = 0;
  // What each training image goes through before its step (random crops, flips); none: the dataset's
  // default (data::default_augmentation: a crop and a flip for CIFAR, nothing for MNIST's). Evaluation
  // sees the images as they are.
  std::optional<data::Augmentation> augment;
  // The convolutions' weights and each batch laid out NHWC (channels last), as a GPU's tensor-core
  // kernels take them; eval of its checkpoints follows.
  bool channels_last = false;
  // The gradient noise scale measured after each epoch, on batches of its own (none by default); the
  // training itself is the same with it and without.
  NoiseScaleOptions noise_scale;
  // Evaluate the test split every this many optimizer steps within an epoch too, outside the epoch's time
  // (0: at each epoch's end only): the steps and time to a target accuracy at that resolution, not an
  // epoch's.
  int64_t eval_every = 0;
  // The device's energy over each epoch's training (NVML on a GPU, RAPL on the CPU), where it can be read.
  bool measure_energy = true;
  // Seconds of the device's idle power measured before the first epoch, where its energy is read (0: none):
  // each epoch's energy above idle is then its energy less the idle draw over its training time.
  double idle_seconds = 2;
  // An idle baseline measured already on this device (a batch study's first run's): taken instead of
  // measuring again.
  std::optional<power::EnergyWindow> known_idle;
  // --memory-limit where given: the bytes each device may hold ({"cpu": N, "cuda:0": M}), applied by the
  // caller before the data is read (cpu_memory, gpu_memory_cap); --chunk auto searches within it. The run
  // record has the run's device's as memory_limit_bytes, outside the options.
  Json memory_limits;
  // Opens the device's power source; power::open_power_source when empty (tests put a fake here).
  std::function<std::unique_ptr<power::PowerSource>(const c10::Device&, std::string& reason)> open_power;
  int64_t limit_train = 0;  // train on the first N images only; 0: all
  int64_t limit_test = 0;   // evaluate on the first N test images only; 0: all
  std::string out_dir = "runs/train";
  bool force = false;        // replace a complete training run in out_dir
  // Stop after the first epoch whose test accuracy reaches this (a share, 0 to 1]; `epochs` is then the
  // most it trains.
  std::optional<double> target_accuracy;
  // A complete run of the same options in out_dir is taken as it is, without training, instead of being
  // refused (a batch-size study or a device comparison run again).
  bool reuse_complete = false;
  // The same computation on every device: dropout's masks drawn on the host from the seed, and on a GPU
  // fp32 kept in fp32 (no TF32), so that two devices' numbers differ by their arithmetic alone. Slower
  // on a GPU (a host draw and a copy per dropout layer and step); `train --compare` sets it for both runs.
  bool device_independent = false;
  // On a GPU, deterministic cuDNN and algorithms (the same numbers run to run); false leaves LibTorch's
  // settings, the algorithms a user's training gets, for the time to an accuracy as they would wait it.
  bool deterministic = true;
  std::string command_line;  // recorded in the run record
  // Told once the run's options, data and output directory are checked and its first epoch (or the
  // earlier session's, told again) is next: where a table's header goes, after any refusal.
  std::function<void()> on_start;
  // Told of each epoch as it ends; without it, each epoch is a log line.
  std::function<void(const EpochResult&)> on_epoch;
  // Asked after each epoch: true stops the run there, without its end record, so that the same options
  // go on from it (Ctrl-C).
  std::function<bool()> stop_requested;

  // Whether each step's batch runs as micro-batches of `chunk`.
  bool accumulates() const { return chunk > 0 && chunk < batch_size; }
  // The most samples one forward and backward pass holds: the chunk where the batch accumulates.
  int64_t pass_batch() const { return accumulates() ? chunk : batch_size; }
};

struct Evaluation {
  double loss = 0;  // mean cross-entropy per sample
  double accuracy = 0;
  int64_t correct = 0;
  int64_t samples = 0;
};

// A test evaluation within an epoch (TrainingOptions::eval_every).
struct StepEvaluation {
  int64_t step = 0;             // the epoch's optimizer steps before it, from 1
  double training_seconds = 0;  // the epoch's training time up to it, device synchronised
  Evaluation test;
  std::optional<double> training_joules;  // the device's energy over that training time, where measured
};

struct EpochResult {
  int epoch = 0;  // from 1
  double train_loss = 0;
  double train_accuracy = 0;
  Evaluation test;
  double epoch_seconds = 0;  // the training part only, device synchronised; evaluation excluded
  double samples_per_s = 0;
  std::string checkpoint;  // the weights written after this epoch
  // With loss scaling: the epoch's steps whose optimizer step the scaler skipped (a gradient overflowed),
  // and the scale at the epoch's end.
  std::optional<int64_t> skipped_steps;
  std::optional<double> loss_scale;
  std::optional<double> lr;  // where a schedule moves the rate: the rate of the epoch's last step
  // False where a weight or a floating-point buffer (batch norm's running statistics) is not a number at
  // the epoch's end, which a finite training loss misses when the last steps' updates overflowed.
  bool weights_finite = true;
  // With options.noise_scale: the gradient noise scale at the epoch's end weights.
  std::optional<NoiseScale> noise_scale;
  // With options.eval_every: the evaluations within the epoch, in order (its end's is `test`).
  std::vector<StepEvaluation> evaluations;
  // The most memory LibTorch held at once on the device while the epoch trained (weights, gradients,
  // optimizer state, the batch and its activations; evaluations left out): what a chunk makes smaller.
  // None in records written before it was measured.
  std::optional<int64_t> peak_memory_bytes;
  // The device's energy over the epoch's training time (its evaluations left out), where it was measured.
  std::optional<double> energy_j;
  // The idle power of the device that the session which trained the epoch measured, where it did: the
  // energy above idle is energy_j less this draw over epoch_seconds (and an evaluation's within the
  // epoch, less it over its training_seconds).
  std::optional<double> idle_power_w;
  std::optional<double> energy_above_idle_j() const;
};

// Joules less an idle draw over the seconds; none where either is unknown.
std::optional<double> above_idle(std::optional<double> joules, std::optional<double> idle_w, double seconds);

// Where a run first reached a target accuracy: within target_epoch, after `step` of its steps (all of
// them where the epoch's end did) and `seconds` of its training time.
struct TargetReached {
  int epoch = 0;
  std::optional<int64_t> step;    // an evaluation within the epoch; none: the epoch's end
  std::optional<double> seconds;  // that evaluation's training_seconds
};
// The first evaluation of the epochs (within each, then at its end) whose test accuracy reaches target.
std::optional<TargetReached> first_reaching(double target, const std::vector<EpochResult>& epochs);

// What --chunk auto found: the largest micro-batch that fits, and the chunk the batch runs in.
struct ChunkSearch {
  int64_t batch = 0;            // the training batch it was for
  int64_t largest_fitting = 0;  // the largest micro-batch up to `batch` that ran its confirmation steps
  int64_t chunk = 0;            // what each batch runs in: 0, the batch whole, where the batch fits
  // Where the search started below the batch, at the largest micro-batch that fitted beside a smaller
  // batch (a batch study): that micro-batch, and that batch; 0: it started at the batch.
  int64_t started_at = 0;
  int64_t bound_from_batch = 0;
  int tries = 0;  // its confirmation's included
  double seconds = 0;
  std::optional<int64_t> peak_memory_bytes;  // of the confirmation at largest_fitting
  int64_t held_bytes = 0;                    // the training batch held on the device beside each try
  double margin = 0;                         // the share of the device's memory left free
  std::optional<int64_t> cpu_memory_limit;   // on the CPU: the limit the search ran under
};
Json to_json(const ChunkSearch& s);

struct TrainingOutcome {
  std::string device;  // resolved: cpu or cuda:N
  int64_t chunk = 0;   // the micro-batches each batch ran in (TrainingOptions::chunk as run); 0: whole
  std::optional<ChunkSearch> chunk_search;  // --chunk auto's choice, where this session made one
  // The device's idle baseline this session measured (or was given), where its energy was read.
  std::optional<power::EnergyWindow> idle;
  std::string jsonl_path;
  std::string checkpoint_path;  // checkpoint.pt, the weights after the last epoch
  std::vector<EpochResult> epochs;  // every epoch of the run, those of earlier sessions included
  int64_t train_samples = 0;        // the training images an epoch goes through
  int resumed_from_epoch = 0;       // the epochs an earlier, interrupted session trained; 0: none
  bool reused = false;              // complete before this call (reuse_complete): nothing was trained
  std::optional<int> target_epoch;  // the first epoch whose test accuracy reached target_accuracy
  // Where an evaluation within target_epoch (eval_every) reached it first: after this many of its steps.
  std::optional<int64_t> target_step;
  std::optional<double> target_seconds;  // and that epoch's training seconds up to it
  bool stopped = false;             // stop_requested ended it before its last epoch
  // The epoch whose training loss or end weights were not finite (NaN or infinite): the run diverged and
  // ended there, complete, since its weights are lost whatever follows.
  std::optional<int> diverged_epoch;
  // With device_independent: the modules that still draw random numbers on the device (dropout inside
  // attention or between recurrent layers), by their path; empty for the planned networks.
  std::vector<std::string> drawn_on_device;
};

// Trains as the options say, writing into out_dir: train.jsonl (a "run" record, one "epoch" record per
// epoch, synced as it goes, and "end"), checkpoint_epochN.pt per epoch, checkpoint.pt (the latest) and
// checkpoint.json (what eval needs to rebuild the model), and resume_epochN.pt for the last epoch (the
// optimizer's state and the random generators). The same seed and device (and, on the CPU, thread count)
// give the same numbers bit for bit; on CUDA, deterministic cuDNN and algorithms are on for the run
// (unless options.deterministic is false: then a GPU's numbers may differ in their last digits).
// A run interrupted in out_dir goes on after its last complete epoch, with the numbers an uninterrupted
// run has (a "resume" record says from which epoch), where its options are these; so does a complete
// run given more epochs than it trained (one that reached its target is complete whatever the count);
// other options are refused in a sentence naming the difference. Logs one line per epoch with spdlog. Throws
// UserError for the user's mistakes.
TrainingOutcome train_model(const TrainingOptions& options);

// The first of the epochs whose training loss is not finite, or that ended with weights that are not:
// where a run diverged; none if none.
std::optional<int> diverged_epoch(const std::vector<EpochResult>& epochs);
// Why the run of these epochs diverged (diverged_epoch): "its training loss was not finite" or "its
// weights were not finite at its end"; empty where it did not.
std::string divergence_cause(const std::vector<EpochResult>& epochs);

// The augmentation a run of these options trains with: options.augment, else its data's default.
data::Augmentation augmentation_of(const TrainingOptions& options);

struct EvalOptions {
  std::string checkpoint;           // a directory written by train_model, or one of its .pt files
  std::optional<std::string> data;  // default: the data it was trained on
  std::string device = "auto";
  std::optional<int64_t> batch_size;  // default: the training run's evaluation batch size
  std::optional<int64_t> limit_test;  // default: the training run's
};

struct CheckpointEvaluation {
  std::string weights_path, model, data, device;
  Evaluation test;
};

// What checkpoint.json says: the model to rebuild, the data it was trained on, the test limit and the
// weights file beside it.
struct CheckpointInfo {
  std::string model;
  std::string data_dir;
  std::string data_name = "mnist";  // the dataset it was trained on: the images and classes of its model
  int64_t limit_test = 0;
  int64_t eval_batch_size = kEvalBatchSize;  // the batches training evaluated the test split in
  std::string weights;  // a file name in the checkpoint's directory
  bool tf32_off = false;  // trained with fp32 kept in fp32 on a GPU, so evaluated so too
  Precision precision = Precision::FP32;  // trained under autocast in fp16 or bf16, so evaluated so too
  bool channels_last = false;             // trained NHWC, so evaluated so too
};

// Reads and checks checkpoint.json as strictly as a configuration: every field's type and range, a
// known model, weights that stay in the directory. Anything else is a UserError naming the file.
CheckpointInfo read_checkpoint_info(const std::string& path);

// Rebuilds the model from checkpoint.json, loads the weights and evaluates the test split.
// A missing or unreadable checkpoint is a UserError naming the file.
CheckpointEvaluation evaluate_checkpoint(const EvalOptions& options);

// "auto" -> cuda:0 where a CUDA device is usable, else cpu; "cuda" -> cuda:0. Throws UserError for a
// malformed device or one that this machine does not have.
std::string resolve_training_device(const std::string& device);

}  // namespace batchscope
