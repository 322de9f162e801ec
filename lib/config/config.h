#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/config/batch_spec.h"
#include "models/model_file.h"

namespace batchscope {
namespace models {
struct ModelSpec;
}

enum class Phase { Train, Infer };
enum class Precision { FP32, FP16, BF16 };
enum class OptimizerKind { SGD, Momentum, Adam, AdamW };
enum class BatchOrder { Ascending, Shuffled };
// Whether a step's time includes copying its batch from host memory to the device.
enum class Transfer { Excluded, Included };
// Whether fp32 convolutions (cuDNN) and matrix products (cuBLAS) on a GPU may run in TF32: LibTorch's own
// default (convolutions may, matrix products may not), both, or neither (IEEE fp32 throughout).
enum class Tf32 { Default, On, Off };
// Whether a training step scales its loss dynamically, as fp16 training does in PyTorch (GradScaler):
// the gradients are unscaled and checked, and the optimizer's step is skipped where one overflowed.
enum class LossScale { Off, Dynamic };

// The dynamic loss scaler's settings, torch.amp.GradScaler's arguments under their names and with its
// defaults: the first scale; the factor it grows by after growth_interval steps in a row without an
// overflow; the factor it shrinks by on an overflow.
struct LossScalerSettings {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool operator==(const LossScalerSettings& o) const {
    return init_scale == o.init_scale && growth_factor == o.growth_factor &&
           backoff_factor == o.backoff_factor && growth_interval == o.growth_interval;
  }
};

// loss_scale auto: dynamic for fp16 training, as PyTorch's GradScaler is used with it; off otherwise.
inline LossScale auto_loss_scale(Phase phase, Precision precision) {
  return phase == Phase::Train && precision == Precision::FP16 ? LossScale::Dynamic : LossScale::Off;
}

std::string to_string(Phase p);
std::string to_string(Precision p);
std::string to_string(OptimizerKind k);
std::string to_string(BatchOrder o);
std::string to_string(Transfer t);
std::string to_string(Tf32 t);
std::string to_string(LossScale s);
// "init_scale 1024, growth_interval 100": the settings that depart from GradScaler's defaults; empty where
// none does.
std::string loss_scaler_words(const LossScalerSettings& s);
// {"init_scale": 65536, ...}: the settings as a record keeps them.
nlohmann::json loss_scaler_json(const LossScalerSettings& s);

// AdamW's weight decay where none is given, PyTorch's and LibTorch's default.
inline constexpr double kAdamWWeightDecay = 0.01;

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::SGD;
  double lr = 0.01;
  double momentum = 0.9;  // used by momentum
  double weight_decay = 0.0;  // adamw's is 0.01 unless given, as in PyTorch (decoupled from the gradient)
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // used by adam and adamw
  // Whether a step updates all parameters in a few multi-tensor operations (PyTorch 2's foreach) or in a
  // loop over them (LibTorch's own). None: as PyTorch 2 decides, multi-tensor on a GPU, a loop on the CPU.
  std::optional<bool> foreach = std::nullopt;
};

// Where a value came from: a file and line with its key ("exp.yaml", 12, "batch"), or the command line
// with its option ("command line", 0, "--batch").
struct ValueOrigin {
  std::string source;
  int line = 0;
  std::string label;
};

// One experiment after defaults and overrides are applied: everything a sweep needs.
// steps: auto. Each batch size is timed in blocks of steps until the 95% confidence interval of its
// median lies within ±ci_width of the median and min_time_s has passed, or until max_time_s (or
// limits::kMaxSteps steps); the point record says which. The first block is limits::kAutoFirstSteps.
struct AutoSteps {
  double ci_width = 0.01;  // a share of the median
  double min_time_s = 0;
  double max_time_s = 10;
};

struct ExperimentConfig {
  std::string name;
  std::string model;
  // A model read from a TorchScript file (model is its path): the file's size and CRC-32 when read, so
  // that a resumed sweep whose file has changed is refused.
  std::optional<models::ModelFile> model_file;
  std::vector<int64_t> input_shape;  // one sample, no batch dimension
  int64_t classes = 0;
  std::vector<int64_t> batch_sizes;  // in the order given (order: shuffled permutes at run time)
  // batch: FROM:max: the sizes are filled in when the sweep starts, from the largest size that fits.
  std::optional<BatchToMax> batch_to_max;
  Phase phase = Phase::Train;
  OptimizerConfig optimizer;
  Precision precision = Precision::FP32;
  bool channels_last = false;
  bool cudnn_benchmark = false;
  Tf32 tf32 = Tf32::Default;
  // Set by the reader: loss_scale auto (the default) is dynamic for fp16 training, off otherwise.
  LossScale loss_scale = LossScale::Off;
  LossScalerSettings loss_scaler;  // used where loss_scale is dynamic
  int warmup_steps = 5;
  int timed_steps = 20;  // with auto_steps, the fewest (the first block)
  std::optional<AutoSteps> auto_steps;
  BatchOrder order = BatchOrder::Ascending;
  std::string data = "synthetic";  // or a dataset: mnist, fashion-mnist, cifar10, cifar100, or a directory
  Transfer transfer = Transfer::Excluded;
  // At most this many samples at a time; 0 = the whole batch. infer: forward passes over slices; train:
  // micro-batches whose gradients accumulate before one optimizer step (gradient accumulation).
  int64_t chunk = 0;
  // chunk: auto (sweep): every batch whole where it fits; a size that runs out of memory whole runs in
  // the largest even micro-batches (slices) that fit beside it, found by a search on the batch itself.
  bool chunk_auto = false;
  uint64_t seed = 0;
  // Extra steps per batch size under LibTorch's profiler, after the timed ones (sweep --profile).
  bool profile = false;
  int profile_steps = 3;
  // Passes over the whole ladder, each in its own shuffled order (repeats: R); 1 runs it once.
  int repeats = 1;
  std::string device = "auto";  // resolved per machine by the sweep: the first GPU, else the CPU
  // Where each key's value came from, and under "experiment" where the experiment itself is, so that
  // checks made once the experiment is resolved can name the file and line. Not in the run record.
  std::map<std::string, ValueOrigin> origins;
};

// The experiment's model: the zoo's, or its TorchScript file's for the input that file takes; nullptr
// where there is none (a file no longer there).
const models::ModelSpec* experiment_model(const ExperimentConfig& e);

// "FILE:LINE: PROBLEM; FIX." about the value of `key` (or, where it was not given, the experiment).
std::string located_value(const ExperimentConfig& e, const std::string& key, const std::string& problem,
                          const std::string& fix);

// experiment_model, or a UserError at the experiment's `model` that names the nearest one.
const models::ModelSpec& known_experiment_model(const ExperimentConfig& e);

// The smallest batch the experiment's step can run: in training, 2 for a model with batch norm on an input
// where a layer's plane is 1x1 (a channel's normalisation over one value is undefined), else 1.
int64_t smallest_step_batch(const ExperimentConfig& e);

// The smallest chunk that runs a batch of `batch` in micro-batches none of which is below
// smallest_step_batch(e) (a batch of 5 in chunks of at most 2 would run 2, 2 and 1): chunk: auto's
// search starts no lower.
int64_t smallest_chunk(const ExperimentConfig& e, int64_t batch);

// One sample's forward FLOPs of the experiment's model at its input and classes, or a UserError, in the
// model's own sentence of what it needs, at the line that set the input (input, seq_len or data; else
// the model).
double experiment_forward_flops(const ExperimentConfig& e);

// The key of the line that set the experiment's input: input, seq_len or data, else model.
std::string input_key(const ExperimentConfig& e);

nlohmann::json to_json(const ExperimentConfig& e);
ExperimentConfig experiment_from_json(const nlohmann::json& j);  // inverse of to_json
// An experiment record (or an object holding them as "experiments") without what follows from a
// TorchScript file's code, model_file.arguments: for telling whether a record of an earlier batchscope,
// which did not write it, holds the same experiment as today's (the file's crc32 still compares).
// Of either JSON type (records keep their keys' order).
template <typename JsonType>
JsonType without_file_arguments(JsonType j) {
  if (!j.is_object()) return j;
  if (j.contains("model_file") && j["model_file"].is_object()) j["model_file"].erase("arguments");
  if (j.contains("experiments") && j["experiments"].is_array()) {
    for (auto& e : j["experiments"]) e = without_file_arguments(e);
  }
  return j;
}

struct SweepConfig {
  std::string source;  // the YAML file, or "command line"
  std::vector<ExperimentConfig> experiments;
};

// Command-line values that replace the YAML's (or stand alone when no YAML is given).
struct SweepOverrides {
  std::optional<std::string> model, device, batch, phase, precision, optimizer, order, data, transfer, tf32,
      loss_scale, foreach;
  // The loss scaler's first scale and growth interval (--loss-scale-init, --loss-scale-growth-interval), as
  // given; they replace the file's loss_scale settings.
  std::optional<std::string> loss_scale_init, loss_scale_growth_interval;
  std::optional<std::vector<int64_t>> input_shape;
  std::optional<int64_t> classes, chunk, seq_len;
  bool chunk_auto = false;                           // --chunk auto
  std::optional<std::string> input_kind;             // a TorchScript file's: float or tokens
  std::optional<int64_t> vocab;                      // a TorchScript file of tokens: ids below it
  std::optional<int64_t> warmup_steps, timed_steps;  // range-checked with the file's values
  bool steps_auto = false;                            // --steps auto
  // steps: auto's settings as given (--ci-width 2%, --min-time 1, --max-time 30); any of them without
  // --steps also sets steps: auto.
  std::optional<std::string> ci_width, min_time, max_time;
  std::optional<uint64_t> seed;
  std::optional<double> lr;
  std::optional<bool> channels_last, cudnn_benchmark, profile;
  std::optional<int64_t> profile_steps, repeats;
};

// Reads and validates a YAML experiment file. Every problem throws UserError naming the file, the
// line and the fix: malformed YAML, unknown keys, wrong types, unknown model (listing the known ones),
// bad device string, empty or inverted batch ranges, non-positive steps.
SweepConfig load_sweep_config(const std::string& path, const SweepOverrides& overrides = {});
// The same from text already in memory; `source` names it in messages.
SweepConfig parse_sweep_config(const std::string& yaml_text, const std::string& source,
                               const SweepOverrides& overrides = {});
// A single experiment from the command line alone (--model is required).
SweepConfig sweep_from_overrides(const SweepOverrides& overrides);

// The accepted device strings: "cpu", "cuda", "cuda:N" and "auto" (the sweep picks one per machine).
// Returns a sentence on error, empty if fine.
std::string check_device_string(const std::string& device);
// What to give instead of a device string that is none of those: "did you mean cuda:0? use cpu, cuda, ..."
// for "gpu:0", the accepted strings alone where none was plainly meant.
std::string device_fix(const std::string& device);

}  // namespace batchscope
