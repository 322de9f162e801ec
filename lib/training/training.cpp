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
#include <random>

#include "data/batch_loader.h"
#include "data/datasets.h"
#include "lib/common/errors.h"
#include "lib/device/environment.h"
#include "lib/device/gpu.h"
#include "lib/timing/optimizer.h"
#include "lib/training/determinism.h"
#include "lib/training/training_parts.h"
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

std::shared_ptr<models::Network> build_network(const std::string& name) {
  const models::ModelSpec* spec = models::find_model(name);
  if (spec == nullptr) {
    throw UserError(
        located("command line", 0, "unknown model " + name, "use one of " + models::known_model_names()));
  }
  try {
    return spec->build(kInput, kClasses);
  } catch (const std::invalid_argument& bad) {
    std::string reason = bad.what();  // the model's own sentence, naming the smallest input it takes
    if (!reason.empty() && reason.back() == '.') reason.pop_back();
    throw UserError(
        located("command line", 0, reason,
                "MNIST images are 1x28x28, so choose a model that takes them, such as mnist_cnn"));
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

}  // namespace

// Refuses a complete training run (or a foreign train.jsonl) in dir unless forced; touches nothing.
void check_output_dir(const std::string& dir, bool force) {
  const fs::path jsonl = fs::path(dir) / kJsonlName;
  std::error_code ec;
  if (force || !fs::exists(jsonl, ec) || fs::file_size(jsonl, ec) == 0) return;
  const JsonlContents contents = read_jsonl(jsonl.string(), BadLines::Collect);
  if (contents.records.empty() || contents.records.front().value("type", "") != record::kRun) {
    throw UserError(located(jsonl.string(), 1, "does not start with a batchscope run record",
                            "choose another --out directory or pass --force to replace it"));
  }
  for (const Json& r : contents.records) {
    if (r.value("type", "") == record::kEnd) {
      throw UserError(
          located(jsonl.string(), 0, "already holds a complete training run",
                  "choose another --out directory or pass --force to train again and replace it"));
    }
  }
}

// Removes what an earlier (interrupted or replaced) run left: our own file names only.
void clear_output_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw UserError(located(dir, 0, "the output directory cannot be created (" + ec.message() + ")",
                            "choose an --out directory you can write to"));
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool ours = name == kJsonlName || name == kCheckpointInfo ||
                      (name.rfind("checkpoint", 0) == 0 && entry.path().extension() == ".pt");
    if (ours) fs::remove(entry.path());
  }
}

LoadedData load_data(const std::string& spec, int64_t limit_train, int64_t limit_test) {
  LoadedData d;
  d.location = data::locate_dataset(spec);
  d.splits = data::load_dataset(d.location);
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
}

Json epoch_record(const EpochResult& r) {
  return {{"type", record::kEpoch},
          {"epoch", r.epoch},
          {"train_loss", r.train_loss},
          {"train_accuracy", r.train_accuracy},
          {"test_loss", r.test.loss},
          {"test_accuracy", r.test.accuracy},
          {"test_correct", r.test.correct},
          {"test_samples", r.test.samples},
          {"epoch_seconds", r.epoch_seconds},
          {"samples_per_s", r.samples_per_s},
          {"checkpoint", fs::path(r.checkpoint).filename().string()}};
}

struct EpochTotals {
  double seconds = 0;
  double loss_sum = 0;  // per-sample losses summed
  int64_t correct = 0;
};

// One pass over the shuffled training split. The loss and hits are summed on the device and read at the
// end, so that no step waits for the host.
EpochTotals train_epoch(models::Network& model, std::vector<torch::Tensor>& parameters,
                        torch::optim::Optimizer& optimizer, data::BatchLoader& loader, int64_t epoch) {
  const torch::Device& device = loader.device();
  model.train();
  loader.start_epoch(epoch);
  const auto on_device = torch::TensorOptions().device(device);
  torch::Tensor loss_sum = torch::zeros({}, on_device.dtype(torch::kDouble));
  torch::Tensor correct = torch::zeros({}, on_device.dtype(torch::kLong));
  synchronize(device);
  const auto start = std::chrono::steady_clock::now();
  data::Batch batch;
  while (loader.next(batch)) {
    for (auto& p : parameters) p.mutable_grad().reset();
    const torch::Tensor logits = model.forward(batch.images);
    const torch::Tensor loss = torch::nn::functional::cross_entropy(logits, batch.labels);
    loss.backward();
    optimizer.step();
    loss_sum += loss.detach().to(torch::kDouble) * static_cast<double>(batch.labels.size(0));
    correct += logits.detach().argmax(1).eq(batch.labels).sum();
  }
  synchronize(device);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return {elapsed.count(), loss_sum.item<double>(), correct.item<int64_t>()};
}

// What eval needs to rebuild the model and reproduce the test numbers (checkpoint.json).
Json rebuild_info(const TrainingOptions& o, const LoadedData& data) {
  const Json data_json = {{"spec", o.data},
                          {"name", data.location.name},
                          {"directory", fs::absolute(data.location.directory).string()},
                          {"train_samples", data.splits.train.size()},
                          {"test_samples", data.splits.test.size()}};
  return {{"model", o.model},
          {"input", kInput},
          {"classes", kClasses},
          {"data", data_json},
          {"eval_batch_size", o.eval_batch_size},
          {"limit_test", o.limit_test},
          {"tf32", o.device_independent ? "off" : "default"}};
}

// The run record's configuration: what rebuilds the model, then how it was trained.
Json training_config(const TrainingOptions& o, const Json& rebuild, const std::string& device_name,
                     const DeterminismScope& determinism, const std::vector<std::string>& drawn_on_device) {
  Json config = rebuild;
  config["epochs"] = o.epochs;
  config["batch_size"] = o.batch_size;
  config["optimizer"] = optimizer_json(o.optimizer);
  config["precision"] = "fp32";
  config["seed"] = o.seed;
  config["device"] = device_name;
  config["threads"] = torch::get_num_threads();
  config["limit_train"] = o.limit_train;
  config["dropout_masks"] = o.device_independent ? kMasksOnHost : kMasksOnDevice;
  if (!drawn_on_device.empty()) config["drawn_on_device"] = drawn_on_device;
  config["shuffle"] = "a permutation per epoch from seed + epoch";
  config["determinism"] = determinism.record();
  return config;
}

TrainingOutcome train_on(const TrainingOptions& options, const std::string& device_name,
                         const LoadedData& data) {
  // The optimizer's foreach decided here, where the device is known, as a sweep decides it.
  TrainingOptions o = options;
  if (!o.optimizer.foreach) o.optimizer.foreach = torch::Device(device_name).is_cuda();
  const data::Dataset& train = data.splits.train;
  if (o.batch_size > train.size()) {
    throw UserError(located(data.location.directory, 0,
                            "--batch " + std::to_string(o.batch_size) + " is larger than the " +
                                std::to_string(train.size()) + " training images",
                            "give a smaller --batch or a larger --limit-train"));
  }
  const torch::Device device(device_name);
  const DeterminismScope determinism(device, /*tf32_off=*/o.device_independent);
  TrainingOutcome outcome;
  torch::manual_seed(o.seed);
  std::shared_ptr<models::Network> model = build_network(o.model);
  model->to(device);
  if (o.device_independent) {
    // A stream of its own: the default generator's, from the same seed, drew the initial weights.
    const at::Generator masks = at::make_generator<at::CPUGeneratorImpl>(o.seed ^ kDropoutSeedSalt);
    outcome.drawn_on_device = models::draw_dropout_masks_on_host(*model, masks).unswitched;
  }
  std::vector<torch::Tensor> parameters = model->parameters();
  std::unique_ptr<torch::optim::Optimizer> optimizer = make_optimizer(o.optimizer, parameters);
  data::BatchLoader loader(train, o.batch_size, o.seed, /*shuffle=*/true, device);

  const Json rebuild = rebuild_info(o, data);
  const Json config = training_config(o, rebuild, device_name, determinism, outcome.drawn_on_device);

  clear_output_dir(o.out_dir);
  outcome.device = device_name;
  outcome.jsonl_path = (fs::path(o.out_dir) / kJsonlName).string();
  outcome.checkpoint_path = (fs::path(o.out_dir) / kLatestWeights).string();
  JsonlWriter writer(outcome.jsonl_path);
  const Json header = context_record(record::kRun, o.command_line, config);
  writer.add(header);
  writer.flush();
  Json info = rebuild;
  info["run_id"] = header["run_id"];

  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    const EpochTotals totals = train_epoch(*model, parameters, *optimizer, loader, epoch);
    EpochResult r;
    r.epoch = epoch;
    const auto samples = static_cast<double>(train.size());
    r.train_loss = totals.loss_sum / samples;
    r.train_accuracy = static_cast<double>(totals.correct) / samples;
    r.epoch_seconds = totals.seconds;
    r.samples_per_s = samples / totals.seconds;
    r.test = evaluate(*model, data.splits.test, o.eval_batch_size, device);
    r.checkpoint = write_checkpoint(*model, o.out_dir, epoch, info);
    writer.add(epoch_record(r));
    writer.flush();
    if (o.on_epoch) {
      o.on_epoch(r);
    } else {
      spdlog::info("epoch {}/{}: loss {:.4f}, test accuracy {:.2f}% ({}/{}), {:.1f} s, {:.0f} samples/s",
                   epoch, o.epochs, r.train_loss, 100 * r.test.accuracy, r.test.correct, r.test.samples,
                   r.epoch_seconds, r.samples_per_s);
    }
    outcome.epochs.push_back(r);
  }
  writer.add(to_json(end_record()));
  writer.flush();
  return outcome;
}

// The output directory of one side of a comparison: cuda:0 -> cuda_0.
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

TrainingOutcome train_model(const TrainingOptions& options) {
  check_options(options);
  const std::string device = resolve_training_device(options.device);
  build_network(options.model);  // an unsuitable model is refused before the data is read
  check_output_dir(options.out_dir, options.force);
  return train_on(options, device, load_data(options.data, options.limit_train, options.limit_test));
}

}  // namespace batchscope
