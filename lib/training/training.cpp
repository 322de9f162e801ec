#include "lib/training/training.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>

#include "data/batch_loader.h"
#include "data/datasets.h"
#include "lib/common/errors.h"
#include "lib/common/micro_batches.h"
#include "lib/common/replaced_results.h"
#include "lib/common/words.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/environment.h"
#include "lib/device/gpu.h"
#include "lib/device/memory_peak.h"
#include "lib/power/device_power.h"
#include "lib/power/energy_meter.h"
#include "lib/records/jsonl.h"
#include "lib/records/run_store.h"
#include "lib/timing/autocast.h"
#include "lib/timing/loss_scaler.h"
#include "lib/timing/optimizer.h"
#include "lib/timing/step_runner.h"
#include "lib/training/determinism.h"
#include "lib/training/fitting_chunk.h"
#include "lib/training/training_parts.h"
#include "models/flop_tally.h"
#include "models/portable_dropout.h"
#include "models/registry.h"

namespace fs = std::filesystem;

namespace batchscope {
namespace training_parts {
namespace {

// Makes the dropout masks' seed differ from the weights' (any odd 64-bit constant would do).
constexpr uint64_t kDropoutSeedSalt = 0x9e3779b97f4a7c15ULL;

}  // namespace

Json optimizer_json(const OptimizerConfig& o) {
  Json j = {{"type", to_string(o.kind)}, {"lr", o.lr}, {"weight_decay", o.weight_decay}};
  if (o.kind == OptimizerKind::Momentum) j["momentum"] = o.momentum;
  if (o.kind == OptimizerKind::Adam || o.kind == OptimizerKind::AdamW) {
    j["betas"] = {o.beta1, o.beta2};
    j["eps"] = o.eps;
  }
  if (o.foreach.value_or(false)) j["foreach"] = true;  // as a sweep's record says it
  return j;
}

std::shared_ptr<models::Network> build_network(const std::string& name, const data::DatasetKind& data,
                                               const std::string& source) {
  const models::ModelSpec* spec = models::find_model(name);
  if (spec == nullptr) {
    throw UserError(located("command line", 0, "--model " + name + " is not a known model",
                            models::unknown_model_fix(name)));
  }
  try {
    return spec->build(data.image, data.classes);
  } catch (const std::invalid_argument& bad) {
    std::string reason = bad.what();  // the model's own sentence, naming the smallest input it takes
    if (!reason.empty() && reason.back() == '.') reason.pop_back();
    const std::string images = data.title + " images are " + models::shape_text(data.image);
    throw UserError(located(source, 0, reason,
                            source == "command line"
                                ? images + ", so choose a model that takes them, such as mnist_cnn"
                                : images + ": restore the checkpoint.json that batchscope train wrote"));
  }
}

namespace {

// The first `limit` samples of a split (all of it for limit <= 0).
data::Dataset first_samples(const data::Dataset& set, int64_t limit) {
  if (limit <= 0 || limit >= set.size()) return set;
  return {set.name, set.images.narrow(0, 0, limit), set.labels.narrow(0, 0, limit)};
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) gpu::synchronize(device.index());
}

// The outcome's target: its epoch, and where an evaluation within that epoch reached it, its step and time.
void set_target(const TrainingOptions& o, TrainingOutcome& outcome) {
  const std::optional<TargetReached> reached =
      o.target_accuracy ? first_reaching(*o.target_accuracy, outcome.epochs) : std::nullopt;
  outcome.target_epoch = reached ? std::optional<int>(reached->epoch) : std::nullopt;
  outcome.target_step = reached ? reached->step : std::nullopt;
  outcome.target_seconds = reached ? reached->seconds : std::nullopt;
}

}  // namespace

// Removes what an earlier (interrupted or replaced) run left: our own file names only.
void clear_output_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw UserError(located(dir, 0, "the output directory cannot be created (" + ec.message() + ")",
                            "choose an --out directory you can write to"));
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (written_by_training(entry.path())) fs::remove(entry.path());
  }
}

LoadedData load_data(const std::string& spec, int64_t limit_train, int64_t limit_test) {
  // LibTorch's CPU memory counted from here on, so that a CPU run's epochs know their peak: the data's
  // images in memory among it (a GPU run's peak is the device's memory alone).
  cpu_memory::install();
  LoadedData d;
  d.location = data::locate_dataset(spec);
  try {
    d.splits = data::load_dataset(d.location);
  } catch (const std::exception& error) {
    // The whole dataset is read before --limit-train takes its first samples: under a small
    // --memory-limit, it is the data that does not fit.
    if (!is_out_of_memory(error) || !cpu_memory::limit()) throw;
    throw UserError(located("command line", 0,
                            "--memory-limit " + format_memory_size(*cpu_memory::limit()) +
                                " cannot hold the " + d.location.kind().title +
                                " data, which is read whole before any limit (" + short_error_message(error) +
                                ")",
                            "give a larger --memory-limit: the data and the model's steps both count"));
  }
  d.splits.train = first_samples(d.splits.train, limit_train);
  d.splits.test = first_samples(d.splits.test, limit_test);
  return d;
}

void check_options(const TrainingOptions& o) {
  auto fail = [](const std::string& problem, const std::string& fix) {
    throw UserError(located("command line", 0, problem, fix));
  };
  if (o.epochs < 1) fail("--epochs " + std::to_string(o.epochs) + " trains nothing", "give at least 1");
  if (o.batch_size < 1 || o.eval_batch_size < 1)
    fail("a batch size must be positive", "give e.g. --batch 64");
  if (!(o.optimizer.lr > 0)) fail("the learning rate must be positive", "give e.g. --lr 0.01");
  if (o.limit_train < 0 || o.limit_test < 0)
    fail("a sample limit must be positive", "give e.g. --limit-train 1000");
  if (o.target_accuracy && !(*o.target_accuracy > 0 && *o.target_accuracy <= 1))
    fail("a target accuracy must lie above 0% and at most 100%", "give e.g. --target-accuracy 98%");
  if (o.lr_schedule.warmup_epochs < 0) fail("a warm-up of negative epochs", "give e.g. --lr-warmup 5");
  if (o.lr_schedule.warmup_epochs > 0 && !(o.lr_schedule.warmup_from > 0))
    fail("a warm-up must start from a positive learning rate", "give e.g. --lr 0.01");
  if (o.eval_every < 0) fail("--eval-every of negative steps", "give e.g. --eval-every 100, or 0 for none");
  if (o.chunk < 0) fail("--chunk of negative samples", "give e.g. --chunk 256, or 0 for the batch whole");
  if (o.noise_scale.on() && o.noise_scale.group < 2)
    fail("--noise-group " + std::to_string(o.noise_scale.group) +
             " makes a big batch of one small batch, and the noise scale compares two batch sizes",
         "give --noise-group 2 or more");
}

struct EpochTotals {
  double seconds = 0;
  std::optional<double> joules;              // the device's energy over those seconds, where measured
  std::optional<int64_t> peak_memory_bytes;  // the most the device held while it trained
  double loss_sum = 0;  // per-sample losses summed
  int64_t correct = 0;
  double last_lr = 0;  // where a schedule set the rates: its last step's
};

// An epoch's training time, the device's energy over it and the most memory it held, measured in the
// segments between its evaluations: each starts and ends with the device synchronised, the energy counter
// read at its edges (and by the meter's own thread, where a counter wraps), never by a step, and the memory's
// peak set anew at its start, so that the evaluations' memory is not the training's.
class TrainingMeter {
 public:
  TrainingMeter(const torch::Device& device, power::PowerSource* source) : device_(device) {
    if (source != nullptr) meter_.emplace(*source);
  }
  void resume() {
    synchronize(device_);
    reset_peak_memory(device_);
    if (meter_) meter_->begin();
    start_ = std::chrono::steady_clock::now();
  }
  void pause() {
    synchronize(device_);
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (const std::optional<int64_t> now = peak_memory(device_)) peak_ = std::max(peak_.value_or(0), *now);
    if (!meter_) return;
    try {
      joules_ += meter_->end().joules;
    } catch (const std::runtime_error& lost) {
      spdlog::warn("energy is not measured from here on: {}", lost.what());
      lost_ = true;
      meter_.reset();
    }
  }
  double seconds() const { return seconds_; }
  // None where no source was read, or it stopped answering in the epoch.
  std::optional<double> joules() const {
    return meter_ && !lost_ ? std::optional<double>(joules_) : std::nullopt;
  }
  // None where the device does not report it.
  std::optional<int64_t> peak_memory_bytes() const { return peak_; }

 private:
  torch::Device device_;
  std::optional<power::EnergyMeter> meter_;
  std::chrono::steady_clock::time_point start_;
  double seconds_ = 0;
  double joules_ = 0;
  bool lost_ = false;
  std::optional<int64_t> peak_;
};

// Where a schedule moves the rate: what each step's rate is made from.
struct StepRates {
  const LrSchedule& schedule;
  double lr;  // the run's rate after any warm-up
  int epochs;
  double at(int64_t step, int64_t steps_per_epoch) const {
    return lr_at(schedule, lr, step, steps_per_epoch, epochs);
  }
};

void set_rate(torch::optim::Optimizer& optimizer, double rate) {
  for (torch::optim::OptimizerParamGroup& group : optimizer.param_groups()) group.options().set_lr(rate);
}

// One pass over the shuffled training split, the forward pass and loss under autocast in fp16 or bf16. The
// loss and hits are summed on the device and read at the end, so that no step waits for the host; a loss
// scaler waits once a step, as GradScaler.step does, to know whether the step overflowed.
// With a chunk smaller than a batch, the batch runs as micro-batches of `chunk` samples and the rest, each
// slice's mean loss weighted by its share of the batch so that the gradients add up to the batch's, then one
// optimizer step (a batch norm normalises each slice by its own statistics, as accumulation does in PyTorch).
// Every `eval_every` steps but the last, `evaluate_at(step, seconds, joules)` is told the epoch's steps,
// training seconds and energy so far, with the device synchronised; its own time and energy are left out
// of the epoch's, and so is their memory from the epoch's peak. The energy is read from `power` where it is
// not null.
EpochTotals train_epoch(models::Network& model, std::vector<torch::Tensor>& parameters,
                        torch::optim::Optimizer& optimizer, data::BatchLoader& loader,
                        data::BatchAugmenter* augmenter, bool channels_last, int64_t chunk,
                        const StepRates* rates, int64_t epoch, Precision precision, LossScaler* scaler,
                        power::PowerSource* power, int64_t eval_every,
                        const std::function<void(int64_t, double, std::optional<double>)>& evaluate_at) {
  const torch::Device& device = loader.device();
  model.train();
  loader.start_epoch(epoch);
  if (augmenter != nullptr) augmenter->start_epoch(epoch);
  const auto on_device = torch::TensorOptions().device(device);
  torch::Tensor loss_sum = torch::zeros({}, on_device.dtype(torch::kDouble));
  torch::Tensor correct = torch::zeros({}, on_device.dtype(torch::kLong));
  TrainingMeter meter(device, power);
  meter.resume();
  data::Batch batch;
  const int64_t steps_per_epoch = loader.batches_per_epoch();
  int64_t step = (epoch - 1) * steps_per_epoch;  // from 0, over the whole run
  int64_t in_epoch = 0;
  double rate = 0;
  while (loader.next(batch)) {
    // Part of the epoch's time, as a data loader's transforms are part of what a user waits for.
    if (augmenter != nullptr) batch.images = augmenter->apply(batch.images);
    batch.images = in_memory_format(batch.images, channels_last);
    if (rates != nullptr) {
      rate = rates->at(step++, steps_per_epoch);
      set_rate(optimizer, rate);
    }
    for (auto& p : parameters) p.mutable_grad().reset();
    const int64_t samples = batch.labels.size(0);
    const bool whole = chunk <= 0 || chunk >= samples;
    const std::vector<int64_t> parts = micro_batch_sizes(samples, chunk);
    const std::vector<torch::Tensor> images = batch.images.split_with_sizes(parts);
    const std::vector<torch::Tensor> labels = batch.labels.split_with_sizes(parts);
    for (std::size_t i = 0; i < images.size(); ++i) {
      torch::Tensor logits, loss;
      {
        const AutocastScope autocast(precision, device);
        logits = model.forward(images[i]);
        loss = torch::nn::functional::cross_entropy(logits, labels[i]);
      }
      // The slice's share of the batch's mean loss.
      if (!whole) loss = loss * (static_cast<double>(labels[i].size(0)) / static_cast<double>(samples));
      if (scaler != nullptr) {
        scaler->scale(loss).backward();
      } else {
        loss.backward();
      }
      loss_sum += loss.detach().to(torch::kDouble) * static_cast<double>(samples);
      correct += logits.detach().argmax(1).eq(labels[i]).sum();
    }
    if (scaler != nullptr) {
      scaler->step(optimizer, parameters);
    } else {
      optimizer.step();
    }
    if (eval_every > 0 && ++in_epoch % eval_every == 0 && in_epoch < steps_per_epoch) {
      meter.pause();
      evaluate_at(in_epoch, meter.seconds(), meter.joules());
      model.train();
      meter.resume();
    }
  }
  meter.pause();
  return {meter.seconds(),         meter.joules(),          meter.peak_memory_bytes(),
          loss_sum.item<double>(), correct.item<int64_t>(), rate};
}

namespace {

// A model's buffers (batch norms' running statistics) as they were when made, put back when it ends: for
// forward passes in train mode that training must not see (the warm-up pass, the noise scale's batches).
class KeptBuffers {
 public:
  explicit KeptBuffers(torch::nn::Module& model) : model_(model) {
    for (const torch::Tensor& b : model.buffers()) kept_.push_back(b.clone());
  }
  ~KeptBuffers() {
    const torch::NoGradGuard no_grad;
    const std::vector<torch::Tensor> now = model_.buffers();
    for (std::size_t i = 0; i < now.size(); ++i) now[i].copy_(kept_[i]);
  }
  KeptBuffers(const KeptBuffers&) = delete;
  KeptBuffers& operator=(const KeptBuffers&) = delete;

 private:
  torch::nn::Module& model_;
  std::vector<torch::Tensor> kept_;
};

}  // namespace

// The libraries' first calls at the run's shapes (cuDNN's and cuBLAS's handles and choice of algorithm,
// the caching allocator's blocks, oneDNN's primitives), in one untimed forward and backward pass over the
// first batch before the first epoch's clock starts: else the first epoch of a process's first run pays
// them (of a batch study, the first size's alone). Nothing of it stays: no optimizer step, the gradients
// dropped, the batch norms' statistics and the random generators put back, so the run's numbers are bit
// for bit those without it. A pass that does not fit is left to the epoch, which says so.
void warm_up_libraries(models::Network& model, std::vector<torch::Tensor>& parameters,
                       const data::Dataset& train, const TrainingOptions& o, const TrainerState& state) {
  {
    const KeptGenerators kept(state);
    const KeptBuffers buffers(model);
    try {
      data::BatchLoader loader(train, o.batch_size, o.seed, /*shuffle=*/false, state.device);
      data::Batch batch;
      if (loader.next(batch)) {
        model.train();
        const torch::Tensor images = in_memory_format(batch.images, o.channels_last);
        const std::vector<int64_t> parts =
            micro_batch_sizes(batch.labels.size(0), o.accumulates() ? o.chunk : 0);
        const std::vector<torch::Tensor> slices = images.split_with_sizes(parts);
        const std::vector<torch::Tensor> labels = batch.labels.split_with_sizes(parts);
        for (std::size_t i = 0; i < slices.size(); ++i) {
          torch::Tensor loss;
          {
            const AutocastScope autocast(o.precision, state.device);
            loss = torch::nn::functional::cross_entropy(model.forward(slices[i]), labels[i]);
          }
          loss.backward();
        }
      }
    } catch (const std::exception& error) {
      if (!is_out_of_memory(error)) throw;
    }
    for (auto& p : parameters) p.mutable_grad().reset();
  }  // the buffers put back before the device is waited for, so that no copy of them falls in the epoch
  synchronize(state.device);
}

// Makes the noise scale's batches and augmentation differ from training's (any odd 64-bit constant would do).
constexpr uint64_t kNoiseScaleSalt = 0xd1b54a32d192ed03ULL;

// The gradient noise scale at the model's weights after `epoch`, from batches of the training split of
// its own (drawn from seed and epoch, augmented as training's are) and in fp32. Each group's batches
// come from one permutation, so that no image is in two of them. What training goes on with is left as
// it was: the random generators (dropout's draws) and the batch norms' running statistics are put back,
// and no optimizer step is taken.
NoiseScale measure_noise_scale(models::Network& model, std::vector<torch::Tensor>& parameters,
                               const TrainingOptions& o, const data::Dataset& train,
                               const data::DatasetKind& kind, const TrainerState& state, int64_t epoch) {
  const torch::Device& device = state.device;
  synchronize(device);
  const auto start = std::chrono::steady_clock::now();
  const KeptGenerators kept(state);
  std::optional<KeptBuffers> buffers(std::in_place, model);
  const uint64_t seed = o.seed ^ kNoiseScaleSalt;
  const int64_t small = o.noise_scale.small_batch(o.pass_batch());
  data::BatchLoader loader(train, small, seed, /*shuffle=*/true, device, /*drop_last=*/true);
  const data::Augmentation augment = augmentation_of(o);
  std::optional<data::BatchAugmenter> augmenter;
  if (augment.any()) augmenter.emplace(augment, kind, seed, device);
  // A permutation (and the augmentation's draws) for each pass over the split the groups take.
  int64_t pass = 0, left = 0;
  const auto start_pass = [&] {
    const int64_t index = epoch * 1000000 + pass++;
    loader.start_epoch(index);
    if (augmenter) augmenter->start_epoch(index);
    left = loader.batches_per_epoch();
  };
  const NextBatch next = [&](torch::Tensor& images, torch::Tensor& labels) {
    data::Batch batch;
    if (!loader.next(batch)) return false;
    --left;
    if (augmenter) batch.images = augmenter->apply(batch.images);
    images = in_memory_format(batch.images, o.channels_last);
    labels = batch.labels;
    return true;
  };
  model.train();
  const BatchLoss loss_of = [&](const torch::Tensor& images, const torch::Tensor& labels) {
    return torch::nn::functional::cross_entropy(model.forward(images), labels);
  };
  std::vector<GradientNorms> norms;
  for (int64_t g = 0; g < o.noise_scale.groups; ++g) {
    if (left < o.noise_scale.group) start_pass();
    norms.push_back(measure_gradient_norms(parameters, loss_of, next, o.noise_scale.group));
  }
  buffers.reset();  // put back within the time the noise scale says it took
  NoiseScale n = noise_scale_of(norms, small, small * o.noise_scale.group);
  synchronize(device);
  n.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return n;
}

// What eval needs to rebuild the model and reproduce the test numbers (checkpoint.json).
Json rebuild_info(const TrainingOptions& o, const LoadedData& data) {
  const Json data_json = {{"spec", o.data},
                          {"name", data.location.name},
                          {"directory", fs::absolute(data.location.directory).string()},
                          {"train_samples", data.splits.train.size()},
                          {"test_samples", data.splits.test.size()}};
  Json info = {{"model", o.model},
               {"input", data.location.kind().image},
               {"classes", data.location.kind().classes},
               {"data", data_json},
               {"eval_batch_size", o.eval_batch_size},
               {"limit_test", o.limit_test},
               {"tf32", o.device_independent ? "off" : "default"}};
  // Only where it is not fp32, so that checkpoints trained before it was written read as they were.
  if (o.precision != Precision::FP32) info["precision"] = to_string(o.precision);
  if (o.channels_last) info["memory_format"] = "channels_last";  // the same: only where it is so
  // A TorchScript file's code and starting weights: eval rebuilds the module from the file.
  const models::ModelSpec* spec = models::find_model(o.model);
  if (spec != nullptr && spec->file)
    info["model_file"] = {{"bytes", spec->file->bytes}, {"crc32", models::crc32_text(spec->file->crc32)}};
  return info;
}

// The run record's configuration: what rebuilds the model, then how it was trained.
Json training_config(const TrainingOptions& o, const Json& rebuild, const std::string& device_name,
                     const DeterminismScope& determinism, const std::vector<std::string>& drawn_on_device) {
  Json config = rebuild;
  config["epochs"] = o.epochs;
  config["batch_size"] = o.batch_size;
  config["optimizer"] = optimizer_json(o.optimizer);
  // Only where the rate moves, so that the records of runs at a constant rate read as they were.
  if (!o.lr_schedule.constant()) config["lr_schedule"] = lr_schedule_json(o.lr_schedule);
  config["precision"] = to_string(o.precision);
  // Only where the loss is scaled, as a sweep's record has it.
  if (o.loss_scale == LossScale::Dynamic) {
    config["loss_scale"] = to_string(o.loss_scale);
    config["loss_scaler"] = loss_scaler_json(o.loss_scaler);
  }
  config["seed"] = o.seed;
  // Only where images are augmented, so that the records of runs without it read as they were.
  const data::Augmentation augment = augmentation_of(o);
  if (augment.any()) {
    config["augment"] = {{"crop_padding", augment.crop_padding},
                         {"flip", augment.flip},
                         {"draws", "each image its own, from seed and epoch"}};
  }
  if (o.target_accuracy) config["target_accuracy"] = *o.target_accuracy;
  if (o.eval_every > 0) config["eval_every"] = o.eval_every;  // only where set, as the others
  // Only where the batch accumulates, as a sweep's record has it: a chunk that holds the batch trains as
  // one without it.
  if (o.accumulates()) config["chunk"] = o.chunk;
  // Only where it is measured, so that the records of runs without it read as they were.
  if (o.noise_scale.on()) config["noise_scale"] = noise_scale_options_json(o.noise_scale, o.pass_batch());
  config["device"] = device_name;
  config["threads"] = torch::get_num_threads();
  config["limit_train"] = o.limit_train;
  config["dropout_masks"] = o.device_independent ? kMasksOnHost : kMasksOnDevice;
  if (!drawn_on_device.empty()) config["drawn_on_device"] = drawn_on_device;
  config["shuffle"] = "a permutation per epoch from seed + epoch";
  config["determinism"] = determinism.record();
  return config;
}

namespace {

// A training step that ran out of the device's memory, said with what makes it fit: micro-batches.
UserError out_of_memory(const TrainingOptions& o, const std::string& device_name,
                        const data::DatasetKind& kind, const std::exception& error) {
  const std::string reason = short_error_message(error);
  const std::string step = o.accumulates() ? "a micro-batch of " + std::to_string(o.chunk) + " samples"
                                           : "a training step of batch " + std::to_string(o.batch_size);
  return UserError(located(
      "command line", 0, step + " does not fit in " + device_name + "'s memory (" + reason + ")",
      "give a --chunk below " + std::to_string(o.pass_batch()) +
          " to accumulate each batch in micro-batches that fit (batchscope maxbatch --model " + o.model +
          " --input " + joined_numbers(kind.image, ",") + " --classes " + std::to_string(kind.classes) +
          " --optimizer " + to_string(o.optimizer.kind) +
          (o.precision != Precision::FP32 ? " --precision " + to_string(o.precision) : std::string()) +
          (o.channels_last ? " --channels-last" : "") + " --device " + device_name +
          " finds the largest), or a smaller --batch"));
}

// Whether every weight and floating-point buffer of the model is a number: a reduction per tensor on its
// device and one wait for all of them, once an epoch.
bool all_finite(models::Network& model) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> each;
  for (const std::vector<torch::Tensor>& tensors : {model.parameters(), model.buffers()}) {
    for (const torch::Tensor& t : tensors) {
      if (t.is_floating_point()) each.push_back(torch::isfinite(t).all());
    }
  }
  return each.empty() || torch::stack(each).all().item<bool>();
}

// The earlier session's files that the next epoch does not go on from: stale resume states.
void remove_other_resume_states(const std::string& dir, int keep) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("resume_epoch", 0) == 0 && name != resume_state_name(keep)) fs::remove(entry.path());
  }
}

// How many training batches the noise scale's big batch holds: --noise-group, or all that the training
// split holds where that is fewer. A UserError where it holds fewer than two.
int64_t noise_group_that_fits(const TrainingOptions& o, const LoadedData& data) {
  const int64_t small = o.noise_scale.small_batch(o.pass_batch());
  const int64_t fit = data.splits.train.size() / std::max<int64_t>(small, 1);
  if (fit >= 2) return std::min<int64_t>(fit, o.noise_scale.group);
  const std::string option = o.noise_scale.batch > 0 ? "--noise-batch"
                             : o.accumulates()       ? "--chunk"
                                                     : "--batch";
  throw UserError(located(data.location.directory, 0,
                          "--noise-scale compares one batch with two or more together, and the " +
                              std::to_string(data.splits.train.size()) + " training images hold " +
                              counted(fit, "batch", "batches") + " of " + std::to_string(small),
                          "give a " + option + " of at most " + std::to_string(data.splits.train.size() / 2) +
                              ", or leave out --noise-scale"));
}

// The options as a run on device_name and this data trains them: on a GPU the optimizer steps
// multi-tensor (foreach) unless told otherwise, as a sweep decides it; the noise scale's big batch holds
// no more training batches than the training split does (a UserError where that is fewer than two).
TrainingOptions as_run(const TrainingOptions& options, const std::string& device_name,
                       const LoadedData& data) {
  TrainingOptions o = options;
  if (!o.optimizer.foreach) o.optimizer.foreach = torch::Device(device_name).is_cuda();
  if (!o.noise_scale.on()) return o;
  const int64_t fit = noise_group_that_fits(o, data);
  if (fit < o.noise_scale.group) {
    spdlog::info("noise scale: big batches of {} batches of {}, all that the {} training images hold", fit,
                 o.noise_scale.small_batch(o.pass_batch()), data.splits.train.size());
    o.noise_scale.group = fit;
  }
  return o;
}

// How a run of these options starts: the model built from the seed on the device (with dropout's masks
// drawn on the host where the options say so), and the run record's configuration.
struct RunStart {
  std::shared_ptr<models::Network> model;
  std::optional<at::Generator> masks;
  std::vector<std::string> drawn_on_device;
  Json rebuild;
  Json config;
};

RunStart start_run(const TrainingOptions& o, const std::string& device_name, const LoadedData& data,
                   const DeterminismScope& determinism) {
  RunStart start;
  torch::manual_seed(o.seed);
  start.model = build_network(o.model, data.location.kind());
  start.model->to(torch::Device(device_name));
  if (o.device_independent) {
    // A stream of its own: the default generator's, from the same seed, drew the initial weights.
    start.masks = at::make_generator<at::CPUGeneratorImpl>(o.seed ^ kDropoutSeedSalt);
    start.drawn_on_device = models::draw_dropout_masks_on_host(*start.model, *start.masks).unswitched;
  }
  start.rebuild = rebuild_info(o, data);
  start.config = training_config(o, start.rebuild, device_name, determinism, start.drawn_on_device);
  return start;
}

}  // namespace

void check_earlier_options(const TrainingOptions& options, const std::string& device_name,
                           const LoadedData& data) {
  if (options.force) return;
  const EarlierRun earlier = read_earlier_run(options.out_dir);
  if (!goes_on_from(earlier)) return;
  const TrainingOptions o = as_run(with_earlier_chunk(options, earlier), device_name, data);
  const DeterminismScope determinism(torch::Device(device_name), /*tf32_off=*/o.device_independent,
                                     o.deterministic);
  check_same_options(earlier, o, start_run(o, device_name, data, determinism).config);
}

// A model with batch norm on an input where a layer's plane is 1x1 cannot train a batch of one sample
// (normalising one value per channel is undefined): a last batch, a micro-batch or the noise scale's
// small batch of one is refused before training, naming the option that makes it.
void check_smallest_batches(const TrainingOptions& o, const LoadedData& data) {
  const models::ModelSpec* spec = models::find_model(o.model);
  if (spec == nullptr) return;  // build_network refuses it
  const data::DatasetKind kind = data.location.kind();
  const int64_t smallest = models::smallest_train_batch(*spec, kind.image, kind.classes);
  if (smallest <= 1) return;
  const auto refuse = [&](const std::string& what, const std::string& fix) {
    throw UserError(located("command line", 0,
                            o.model + " cannot train " + what + " on " + models::shape_text(kind.image) +
                                " images: a batch norm layer sees a 1x1 activation there, and normalising "
                                "one value per channel is undefined",
                            fix));
  };
  const int64_t images = data.splits.train.size();
  const int64_t rest = images % o.batch_size;
  if (rest > 0 && rest < smallest) {
    refuse("the last batch of each epoch, " + counted(rest, "image") + " (" + std::to_string(images) +
               " training images in batches of " + std::to_string(o.batch_size) + ")",
           "give another --batch, or --limit-train " + std::to_string(images - rest));
  }
  for (const int64_t batch : {o.batch_size, rest}) {
    if (batch == 0 || !o.accumulates()) continue;
    const std::vector<int64_t> parts = micro_batch_sizes(batch, o.chunk);
    if (parts.back() >= smallest) continue;
    refuse("a batch of " + std::to_string(batch) + " in micro-batches of at most " + std::to_string(o.chunk) +
               " (" + micro_batch_text(parts) + ")",
           "give --chunk " + std::to_string(smallest_chunk_for(batch, smallest)) + " or more");
  }
  if (o.noise_scale.on() && o.noise_scale.small_batch(o.pass_batch()) < smallest) {
    refuse("the noise scale's small batch of " + std::to_string(o.noise_scale.small_batch(o.pass_batch())),
           "give --noise-batch " + std::to_string(smallest) + " or more");
  }
}

TrainingOutcome train_on(const TrainingOptions& options, const std::string& device_name,
                         const LoadedData& data) {
  const data::Dataset& train = data.splits.train;
  if (options.batch_size > train.size()) {
    throw UserError(located(data.location.directory, 0,
                            "--batch " + std::to_string(options.batch_size) + " is larger than the " +
                                std::to_string(train.size()) + " training images",
                            "give a smaller --batch or a larger --limit-train"));
  }
  const torch::Device device(device_name);
  if (options.precision == Precision::FP16 && !device.is_cuda()) {
    throw UserError(located("command line", 0,
                            "--precision fp16 trains under autocast on a GPU only, not on " + device_name,
                            "give --device cuda, or --precision bf16"));
  }
  // Held to the end: a second run in the same directory would append its epochs to this one's log and
  // write over its checkpoints.
  const OutputDirectoryLock lock(options.out_dir, ::flock, "training run");
  const EarlierRun earlier = options.force ? EarlierRun{} : read_earlier_run(options.out_dir);
  const DeterminismScope determinism(device, /*tf32_off=*/options.device_independent, options.deterministic);
  TrainingOutcome outcome;
  // --chunk auto: the earlier session's chunk, else the search's, before the run's model is built, so that
  // the search has the device's memory to itself.
  TrainingOptions chosen = with_earlier_chunk(options, earlier);
  if (options.chunk_auto && !goes_on_from(earlier)) {
    // A --noise-batch that the training split cannot hold twice is refused before the search, not after
    // it; without one, the small batch is the micro-batch the search finds.
    if (options.noise_scale.on() && options.noise_scale.batch > 0) noise_group_that_fits(options, data);
    outcome.chunk_search = search_fitting_chunk(options, device_name, data.location.kind());
    chosen.chunk = outcome.chunk_search->chunk;
    spdlog::info("--chunk auto: {}", describe(*outcome.chunk_search));
  } else if (options.chunk_auto) {
    spdlog::info("--chunk auto: going on with the earlier session's {}",
                 chosen.accumulates() ? "micro-batches of " + std::to_string(chosen.chunk) : "whole batches");
  }
  const TrainingOptions o = as_run(chosen, device_name, data);
  check_smallest_batches(o, data);
  outcome.chunk = o.accumulates() ? o.chunk : 0;
  outcome.device = device_name;
  outcome.train_samples = train.size();
  outcome.jsonl_path = (fs::path(o.out_dir) / kJsonlName).string();
  outcome.checkpoint_path = (fs::path(o.out_dir) / kLatestWeights).string();
  const RunStart start = start_run(o, device_name, data, determinism);
  const std::shared_ptr<models::Network>& model = start.model;
  outcome.drawn_on_device = start.drawn_on_device;
  const Json& rebuild = start.rebuild;
  const Json& config = start.config;

  // An earlier session's epochs are kept where its options are these; with none, its run record alone
  // is replaced.
  const int done = static_cast<int>(earlier.epochs.size());
  const bool complete = earlier.state == EarlierRun::State::Complete;
  check_same_options(earlier, o, config);
  if (complete && !goes_on_with_other_epochs(earlier, o)) {
    outcome.reused = true;
    outcome.epochs = earlier.epochs;
    outcome.diverged_epoch = batchscope::diverged_epoch(outcome.epochs);
    set_target(o, outcome);
    return outcome;
  }

  // Going on: the weights, then the optimizer's state and the generators, as they were after the last
  // epoch.
  if (done > 0) load_weights(*model, earlier.epochs.back().checkpoint, o.model, device);
  // After the weights are read, which may bring them in another layout.
  if (o.channels_last) to_channels_last(*model);
  std::vector<torch::Tensor> parameters = model->parameters();
  const std::unique_ptr<torch::optim::Optimizer> optimizer = make_optimizer(o.optimizer, parameters);
  const std::unique_ptr<LossScaler> scaler =
      o.loss_scale == LossScale::Dynamic ? std::make_unique<LossScaler>(device, o.loss_scaler) : nullptr;
  const TrainerState state{optimizer.get(), device, start.masks, scaler.get()};
  Json info = rebuild;
  // checkpoint.json alone (not the run's configuration) also keeps where the TorchScript file was, so that
  // eval finds a file given by a relative path from another directory.
  if (info.contains("model_file"))
    info["model_file"]["path"] = fs::absolute(o.model).lexically_normal().string();
  if (done > 0) {
    read_resume_state((fs::path(o.out_dir) / resume_state_name(done)).string(), state);
    if (earlier.truncated_tail) fs::resize_file(earlier.jsonl, earlier.complete_bytes);
    remove_other_resume_states(o.out_dir, done);
    outcome.resumed_from_epoch = done;
    if (earlier.run.contains("run_id")) info["run_id"] = earlier.run["run_id"];
  } else if (o.force) {
    // The run replaced is kept until this one is complete: one stopped early loses nothing.
    if (const std::optional<std::string> kept = set_aside_replaced(
            o.out_dir, [](const std::string& name) { return written_by_training(name); },
            [](const std::string& dir) {
              return log_ends_with((fs::path(dir) / kJsonlName).string(), record::kEnd);
            })) {
      spdlog::info("--force: the training run this one replaces is kept in {} until this one is complete",
                   *kept);
    }
  } else {
    clear_output_dir(o.out_dir);
  }
  data::BatchLoader loader(train, o.batch_size, o.seed, /*shuffle=*/true, device);
  std::optional<StepRates> rates;
  if (!o.lr_schedule.constant()) rates.emplace(StepRates{o.lr_schedule, o.optimizer.lr, o.epochs});
  const data::Augmentation augment = augmentation_of(o);
  std::optional<data::BatchAugmenter> augmenter;
  if (augment.any()) {
    augmenter.emplace(augment, data.location.kind(), o.seed, device);
    spdlog::info("training images augmented ({}): {}", data::to_string(augment),
                 data::describe(augment, data.location.kind()));
  }
  if (o.accumulates()) {
    const std::vector<int64_t> parts = micro_batch_sizes(o.batch_size, o.chunk);
    const std::string sizes = parts.front() == parts.back() ? " of " + std::to_string(parts.front())
                                                            : " (" + micro_batch_text(parts) + ")";
    spdlog::info("gradient accumulation: each batch of {} as {}{}, then one optimizer step", o.batch_size,
                 counted(static_cast<int64_t>(parts.size()), "micro-batch", "micro-batches"), sizes);
  } else if (o.chunk > 0) {
    spdlog::info("--chunk {} holds the batch of {}: each step runs it whole", o.chunk, o.batch_size);
  }
  // The device's energy, where it can be read: how, in the run (and resume) record, outside the options.
  std::string no_power;
  std::unique_ptr<power::PowerSource> power_source;
  if (!o.measure_energy) {
    no_power = "energy measurement was turned off (--no-energy).";
  } else {
    power_source = o.open_power ? o.open_power(device, no_power) : power::open_power_source(device, no_power);
    if (!power_source) spdlog::info("energy on {}: not measured: {}", device_name, no_power);
  }
  Json power_record = power::describe_power(power_source.get(), no_power);
  if (power_source) {
    // The idle baseline, with the model built and nothing running: what the device draws doing nothing.
    if (o.known_idle) {
      outcome.idle = o.known_idle;
    } else if (o.idle_seconds > 0) {
      synchronize(device);
      outcome.idle = power::measure_idle(*power_source, o.idle_seconds);
    }
    if (outcome.idle) {
      spdlog::info("energy on {}: {} ({}), idle {:.1f} W{}", device_name, power_source->method(),
                   power_source->scope(), outcome.idle->avg_power_w,
                   o.known_idle ? " (measured before)" : "");
    }
    power_record["idle"] = power::describe_idle(outcome.idle);
  }
  JsonlWriter writer(outcome.jsonl_path);
  if (done > 0) {
    Json resumed = context_record(record::kResume, o.command_line, config);
    resumed["from_epoch"] = done;
    resumed["power"] = power_record;
    if (o.memory_limits.contains(device_name))
      resumed["memory_limit_bytes"] = {{device_name, o.memory_limits[device_name]}};
    writer.add(resumed);
    if (complete) {
      spdlog::info("going on with the complete training run in {} after its last epoch, {}, to {} epochs",
                   o.out_dir, done, o.epochs);
    } else {
      spdlog::info("going on with the training run in {} after epoch {} of {}", o.out_dir, done, o.epochs);
    }
    // Unlike a sweep's sizes, the epochs do not depend on the limit: each batch goes on as it began, and
    // the resume record holds this session's limit.
    const Json limit_now = resumed.value("memory_limit_bytes", Json());
    if (memory_limits_text(earlier.memory_limits) != memory_limits_text(limit_now)) {
      spdlog::warn(
          "{} ran last under memory limits {} (--memory-limit) and goes on under {}: each batch "
          "still runs {}, and a step that does not fit runs out of memory",
          earlier.jsonl, memory_limits_text(earlier.memory_limits), memory_limits_text(limit_now),
          o.accumulates() ? "in micro-batches of " + std::to_string(o.chunk) : std::string("whole"));
    }
  } else {
    Json header = context_record(record::kRun, o.command_line, config);
    header["power"] = power_record;
    if (o.memory_limits.contains(device_name))
      header["memory_limit_bytes"] = {{device_name, o.memory_limits[device_name]}};
    if (outcome.chunk_search) header["chunk_search"] = to_json(*outcome.chunk_search);
    info["run_id"] = header["run_id"];
    writer.add(header);
  }
  writer.flush();

  const auto finished = [&](const EpochResult& r) {
    if (o.on_epoch) {
      o.on_epoch(r);
    } else {
      const std::string scaling = r.skipped_steps
                                      ? fmt::format("; loss scale {:g}, {} skipped", r.loss_scale.value_or(0),
                                                    counted(*r.skipped_steps, "step"))
                                      : "";
      spdlog::info("epoch {}/{}: loss {:.4f}, test accuracy {:.2f}% ({}/{}), {:.1f} s, {:.0f} samples/s{}",
                   r.epoch, o.epochs, r.train_loss, 100 * r.test.accuracy, r.test.correct, r.test.samples,
                   r.epoch_seconds, r.samples_per_s, scaling);
    }
    outcome.epochs.push_back(r);
    set_target(o, outcome);
  };
  if (o.noise_scale.on()) {
    // What it costs, said where it is more than the epoch it follows.
    const int64_t small = o.noise_scale.small_batch(o.pass_batch());
    const int64_t passes = o.noise_scale.groups * o.noise_scale.group * small;
    if (passes > train.size()) {
      spdlog::warn(
          "the noise scale takes {} batches of {} after each epoch: {:.1f} epochs' worth of forward and "
          "backward passes; a smaller --noise-batch or --noise-scale measures for less",
          o.noise_scale.groups * o.noise_scale.group, small,
          static_cast<double>(passes) / static_cast<double>(train.size()));
    }
  }
  if (done < o.epochs) warm_up_libraries(*model, parameters, train, o, state);
  if (o.on_start) o.on_start();
  for (const EpochResult& r : earlier.epochs) finished(r);
  outcome.diverged_epoch = batchscope::diverged_epoch(outcome.epochs);
  for (int epoch = done + 1; epoch <= o.epochs && !outcome.target_epoch && !outcome.diverged_epoch; ++epoch) {
    const int64_t skipped_before = scaler ? scaler->skipped_steps() : 0;
    EpochResult r;
    const auto evaluate_test = [&] {
      try {
        return evaluate(*model, data.splits.test, o.eval_batch_size, device, o.precision, o.channels_last);
      } catch (const std::exception& error) {
        if (!is_out_of_memory(error)) throw;
        throw UserError(located("command line", 0,
                                "evaluating the test split in batches of " +
                                    std::to_string(std::min(o.eval_batch_size, data.splits.test.size())) +
                                    " does not fit in " + device_name + "'s memory (" +
                                    short_error_message(error) + ")",
                                "give a smaller --eval-batch"));
      }
    };
    const auto evaluate_at = [&](int64_t step, double seconds, std::optional<double> joules) {
      r.evaluations.push_back({step, seconds, evaluate_test(), joules});
    };
    EpochTotals totals;
    try {
      totals = train_epoch(*model, parameters, *optimizer, loader, augmenter ? &*augmenter : nullptr,
                           o.channels_last, o.accumulates() ? o.chunk : 0, rates ? &*rates : nullptr, epoch,
                           o.precision, scaler.get(), power_source.get(), o.eval_every, evaluate_at);
    } catch (const UserError&) {
      throw;  // an evaluation within the epoch that did not fit, said already
    } catch (const std::exception& error) {
      if (!is_out_of_memory(error)) throw;
      throw out_of_memory(o, device_name, data.location.kind(), error);
    }
    r.peak_memory_bytes = totals.peak_memory_bytes;
    r.energy_j = totals.joules;
    if (totals.joules && outcome.idle) r.idle_power_w = outcome.idle->avg_power_w;
    r.epoch = epoch;
    const auto samples = static_cast<double>(train.size());
    r.train_loss = totals.loss_sum / samples;
    r.train_accuracy = static_cast<double>(totals.correct) / samples;
    r.epoch_seconds = totals.seconds;
    r.samples_per_s = samples / totals.seconds;
    if (scaler) {
      r.skipped_steps = scaler->skipped_steps() - skipped_before;
      r.loss_scale = scaler->current_scale();
    }
    if (rates) r.lr = totals.last_lr;
    r.weights_finite = all_finite(*model);
    r.test = evaluate_test();
    if (o.noise_scale.on()) {
      r.noise_scale = measure_noise_scale(*model, parameters, o, train, data.location.kind(), state, epoch);
    }
    r.checkpoint = write_checkpoint(*model, o.out_dir, epoch, info);
    // Written before the epoch's record: a run stopped after that record goes on from this epoch.
    write_resume_state(o.out_dir, epoch, state);
    writer.add(epoch_record(r));
    writer.flush();
    remove_other_resume_states(o.out_dir, epoch);
    finished(r);
    if (!std::isfinite(r.train_loss) || !r.weights_finite) {
      outcome.diverged_epoch = epoch;
      spdlog::warn(
          "epoch {}: {}: the run diverged and ends here; a smaller --lr, a --lr-warmup or a --lr-decay may "
          "keep it finite",
          epoch, divergence_cause({r}));
      break;
    }
    if (epoch < o.epochs && !outcome.target_epoch && o.stop_requested && o.stop_requested()) {
      outcome.stopped = true;
      return outcome;
    }
  }
  Json end = to_json(end_record());
  if (outcome.diverged_epoch) end["diverged_epoch"] = *outcome.diverged_epoch;
  if (o.target_accuracy) {
    end["target_accuracy"] = *o.target_accuracy;
    end["target_epoch"] = outcome.target_epoch ? Json(*outcome.target_epoch) : Json();
    if (outcome.target_step) end["target_step"] = *outcome.target_step;  // within target_epoch
  }
  writer.add(end);
  writer.flush();
  const DroppedReplaced dropped = drop_replaced(o.out_dir);
  if (!dropped.left.empty()) {
    spdlog::warn(
        "the training run this one replaced is kept in {}, which could not be removed: remove it by hand",
        dropped.left);
  }
  return outcome;
}

}  // namespace training_parts

using namespace training_parts;

std::string resolve_training_device(const std::string& device) {
  const std::string problem = check_device_string(device);
  if (!problem.empty()) throw UserError(located("command line", 0, problem, ""));
  if (device == "auto") return gpu::device_count() > 0 ? "cuda:0" : "cpu";
  if (device == "cpu") return device;
  const std::string resolved = device == "cuda" ? "cuda:0" : device;
  const int count = gpu::device_count();
  const int index = std::stoi(resolved.substr(5));
  if (index >= count) {
    throw UserError(
        located("command line", 0,
                "device " + device + " is not available here: this machine has " + std::to_string(count) +
                    " usable CUDA device(s)" +
                    (gpu::built_with_cuda() ? "" : " (batchscope was built with a CPU-only LibTorch)"),
                count == 0 ? "use --device cpu, or run on a machine with a GPU and a CUDA build of batchscope"
                           : "use cuda:0 to cuda:" + std::to_string(count - 1)));
  }
  return resolved;
}

std::optional<double> above_idle(std::optional<double> joules, std::optional<double> idle_w, double seconds) {
  if (!joules || !idle_w) return std::nullopt;
  return *joules - *idle_w * seconds;
}

std::optional<double> EpochResult::energy_above_idle_j() const {
  return above_idle(energy_j, idle_power_w, epoch_seconds);
}

std::optional<TargetReached> first_reaching(double target, const std::vector<EpochResult>& epochs) {
  for (const EpochResult& r : epochs) {
    for (const StepEvaluation& e : r.evaluations) {
      if (e.test.accuracy >= target) return TargetReached{r.epoch, e.step, e.training_seconds};
    }
    if (r.test.accuracy >= target) return TargetReached{r.epoch, std::nullopt, std::nullopt};
  }
  return std::nullopt;
}

std::optional<int> diverged_epoch(const std::vector<EpochResult>& epochs) {
  for (const EpochResult& r : epochs) {
    if (!std::isfinite(r.train_loss) || !r.weights_finite) return r.epoch;
  }
  return std::nullopt;
}

std::string divergence_cause(const std::vector<EpochResult>& epochs) {
  for (const EpochResult& r : epochs) {
    if (!std::isfinite(r.train_loss)) return "its training loss was not finite";
    if (!r.weights_finite) return "its weights were not finite at its end";
  }
  return "";
}

data::Augmentation augmentation_of(const TrainingOptions& options) {
  return options.augment.value_or(data::default_augmentation(data::kind_of_data(options.data)));
}

TrainingOutcome train_model(const TrainingOptions& options) {
  check_options(options);
  const std::string device = resolve_training_device(options.device);
  build_network(options.model, data::kind_of_data(options.data));  // refused before the data is read
  check_output_dir(options);
  return train_on(options, device, load_data(options.data, options.limit_train, options.limit_test));
}

}  // namespace batchscope
