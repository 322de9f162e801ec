#include "lib/sweep/machine_check.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "lib/common/errors.h"
#include "lib/common/micro_batches.h"
#include "lib/config/experiment_reader.h"
#include "lib/device/gpu.h"
#include "models/flop_tally.h"
#include "models/registry.h"

namespace batchscope {
namespace {

// Whether `key`'s value (or, for a default, the experiment) came from the command line.
bool from_command_line(const ExperimentConfig& e, const std::string& key) {
  auto found = e.origins.find(key);
  if (found == e.origins.end() || found->second.source.empty()) found = e.origins.find("experiment");
  return found != e.origins.end() && found->second.source == kCommandLine;
}

// How to give `key` another value where its value came from: "--precision bf16" on the command line,
// "precision: bf16" in a file.
std::string setting(const ExperimentConfig& e, const std::string& key, const std::string& value) {
  if (!from_command_line(e, key)) return key + ": " + value;
  std::string option = key;
  std::replace(option.begin(), option.end(), '_', '-');
  return "--" + option + " " + value;
}

}  // namespace

void check_experiment_settings(const ExperimentConfig& e) {
  experiment_forward_flops(e);  // refuses an unknown model, or an input the model cannot take
  const int64_t smallest = smallest_step_batch(e);
  const int64_t first = e.batch_to_max ? e.batch_to_max->from
                        : e.batch_sizes.empty() ? smallest
                                                : *std::min_element(e.batch_sizes.begin(), e.batch_sizes.end());
  if (first < smallest) {
    throw UserError(located_value(
        e, "batch",
        e.model + " cannot train at batch size " + std::to_string(first) + " on a " +
            models::shape_text(e.input_shape) + " input: a batch norm layer sees a 1x1 activation there, "
            "and normalising one value per channel is undefined",
        "start the batch sizes at " + std::to_string(smallest) + ", or give a larger input"));
  }
  for (const int64_t batch : e.batch_sizes) {
    if (e.chunk <= 0) break;
    const std::vector<int64_t> parts = micro_batch_sizes(batch, e.chunk);
    if (parts.back() >= smallest) continue;
    throw UserError(located_value(
        e, "chunk",
        e.model + " cannot train batch size " + std::to_string(batch) + " in micro-batches of at most " +
            std::to_string(e.chunk) + " (" + micro_batch_text(parts) +
            "): a batch norm layer sees a 1x1 activation in the one of " + std::to_string(parts.back()) +
            " sample, and normalising one value per channel is undefined",
        "give a chunk of " + std::to_string(smallest_chunk(e, batch)) + " or more"));
  }
  if (e.channels_last && e.input_shape.size() != 3) {
    throw UserError(located_value(e, "channels_last", "channels_last needs image inputs of shape [C, H, W]",
                                  from_command_line(e, "channels_last")
                                      ? "drop --channels-last for this model"
                                      : "set channels_last: false for this model"));
  }
}

void check_sweep_settings(const SweepConfig& config) {
  for (const ExperimentConfig& e : config.experiments) check_experiment_settings(e);
}

namespace {

void check_experiment(const ExperimentConfig& e) {
  check_experiment_settings(e);
  const torch::Device device(e.device);
  if (device.is_cuda()) {
    const int count = gpu::device_count();
    if (count == 0) {
      throw UserError(located_value(
          e, "device",
          "device " + e.device + " is asked for but no CUDA device is usable here" +
              (gpu::built_with_cuda() ? "" : " (this batchscope was built with a CPU-only LibTorch)"),
          "use " + setting(e, "device", "cpu") +
              ", or run on a machine with a GPU and a CUDA build of batchscope"));
    }
    if (device.index() >= count) {
      throw UserError(located_value(e, "device",
                                    "device " + e.device + " does not exist, this machine has " +
                                        std::to_string(count) + " CUDA device(s)",
                                    "use cuda:0 to cuda:" + std::to_string(count - 1)));
    }
  } else if (e.precision == Precision::FP16) {
    throw UserError(located_value(e, "precision", "fp16 autocast is only available on CUDA devices",
                                  "use " + setting(e, "precision", "bf16") + " or fp32 on the CPU"));
  }
  if (data::is_real_data(e.data)) data::locate_dataset(e.data);  // a UserError naming what is missing
}

}  // namespace

SweepConfig resolve_for_machine(const SweepConfig& config) {
  SweepConfig resolved = config;
  for (ExperimentConfig& e : resolved.experiments) {
    if (e.device == "auto") e.device = gpu::device_count() > 0 ? "cuda:0" : "cpu";
    if (e.device == "cuda") e.device = "cuda:0";
    // Decided here, where the device is known, so that the run record says which step ran.
    if (!e.optimizer.foreach) e.optimizer.foreach = e.phase == Phase::Train && e.device.rfind("cuda", 0) == 0;
    check_experiment(e);
  }
  return resolved;
}

// The training split of every dataset the experiments use, read once before anything is written.
using LoadedData = std::map<std::string, std::shared_ptr<data::DatasetSplits>>;

LoadedData load_data(const SweepConfig& config) {
  LoadedData loaded;
  for (const ExperimentConfig& e : config.experiments) {
    if (!data::is_real_data(e.data)) continue;
    auto& splits = loaded[e.data];
    if (!splits) {
      splits = std::make_shared<data::DatasetSplits>(data::load_dataset(data::locate_dataset(e.data)));
      spdlog::info("{}: {} training images", e.data, splits->train.size());
    }
    const int64_t images = splits->train.size();
    for (int64_t b : e.batch_sizes) {
      if (b > images) {
        throw UserError(located_value(e, "batch",
                                      "batch size " + std::to_string(b) + " is larger than the " +
                                          std::to_string(images) + " training images of " + e.data,
                                      "use batch sizes up to " + std::to_string(images)));
      }
    }
  }
  return loaded;
}

}  // namespace batchscope
