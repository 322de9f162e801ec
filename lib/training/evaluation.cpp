#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "data/batch_loader.h"
#include "lib/common/errors.h"
#include "lib/common/words.h"
#include "lib/timing/autocast.h"
#include "lib/timing/step_runner.h"
#include "lib/training/determinism.h"
#include "lib/training/training_parts.h"
#include "models/flop_tally.h"

// The test split evaluated: after each epoch of training, and for a checkpoint (batchscope eval).

namespace fs = std::filesystem;

namespace batchscope {
namespace training_parts {

// Per-sample losses are summed in double on the device and read once, so the result does not depend on
// how many batches there were, only on the logits.
Evaluation evaluate(models::Network& model, const data::Dataset& test, int64_t batch_size,
                    const torch::Device& device, Precision precision, bool channels_last) {
  torch::NoGradGuard no_grad;
  model.eval();
  data::BatchLoader loader(test, std::min(batch_size, test.size()), 0, /*shuffle=*/false, device);
  loader.start_epoch(0);
  const auto on_device = torch::TensorOptions().device(device);
  torch::Tensor loss_sum = torch::zeros({}, on_device.dtype(torch::kDouble));
  torch::Tensor correct = torch::zeros({}, on_device.dtype(torch::kLong));
  data::Batch batch;
  while (loader.next(batch)) {
    torch::Tensor logits;
    {
      const AutocastScope autocast(precision, device);
      logits = model.forward(in_memory_format(batch.images, channels_last));
    }
    namespace F = torch::nn::functional;
    // In fp32 as training takes its loss (autocast runs cross_entropy in fp32): bf16 logits would give a loss
    // of 3 significant digits.
    loss_sum += F::cross_entropy(logits.to(torch::kFloat), batch.labels,
                                 F::CrossEntropyFuncOptions().reduction(torch::kNone))
                    .to(torch::kDouble)
                    .sum();
    correct += logits.argmax(1).eq(batch.labels).sum();
  }
  Evaluation e;
  e.samples = test.size();
  e.correct = correct.item<int64_t>();
  e.loss = loss_sum.item<double>() / static_cast<double>(e.samples);
  e.accuracy = static_cast<double>(e.correct) / static_cast<double>(e.samples);
  return e;
}

}  // namespace training_parts

using namespace training_parts;

CheckpointEvaluation evaluate_checkpoint(const EvalOptions& options) {
  const fs::path given(options.checkpoint);
  std::error_code ec;
  if (!fs::exists(given, ec)) {
    throw UserError(
        located(options.checkpoint, 0, "no such checkpoint",
                "give a directory written by batchscope train, or one of its checkpoint_epochN.pt files"));
  }
  const bool is_dir = fs::is_directory(given, ec);
  // The other files a training run writes, given where its weights are meant.
  const std::string file = given.filename().string();
  if (!is_dir && (file.rfind("resume_epoch", 0) == 0 || file == kCheckpointInfo || file == kJsonlName)) {
    throw UserError(
        located(options.checkpoint, 0,
                file == kJsonlName        ? "is the run's log, not its weights"
                : file == kCheckpointInfo ? "describes the weights, and is not them"
                                          : "is a resume state (the optimizer's and the generators'), "
                                            "not the model's weights",
                "give the run's directory, its checkpoint.pt, or one of its checkpoint_epochN.pt"));
  }
  if (is_dir && !fs::exists(given / kCheckpointInfo, ec)) {
    // A batch study or a comparison: a training run in each subdirectory.
    std::vector<std::string> runs;
    for (fs::directory_iterator it(given, ec), end; !ec && it != end; it.increment(ec)) {
      if (fs::exists(it->path() / kCheckpointInfo)) runs.push_back(it->path().filename().string());
    }
    std::sort(runs.begin(), runs.end());
    if (!runs.empty()) {
      throw UserError(located(options.checkpoint, 0,
                              "holds training runs in its subdirectories (" + listed(runs) + "), not one",
                              "give one of them, e.g. " + (given / runs.front()).string()));
    }
  }
  const fs::path dir = is_dir ? given : given.parent_path();
  const fs::path info_path = dir / kCheckpointInfo;
  const CheckpointInfo info = read_checkpoint_info(info_path.string());
  const fs::path weights = is_dir ? dir / info.weights : given;
  if (!fs::is_regular_file(weights, ec)) {
    if (is_dir) {
      throw UserError(located(info_path.string(), 0,
                              "names the weights " + info.weights + ", which are not beside it",
                              "give one of the directory's checkpoint_epochN.pt files, or train again"));
    }
    throw UserError(
        located(weights.string(), 0, "no such weights file",
                "give a directory written by batchscope train, or one of its checkpoint_epochN.pt files"));
  }
  if (!options.data && !fs::is_directory(info.data_dir, ec)) {
    throw UserError(located(info_path.string(), 0,
                            "names the data directory " + info.data_dir + ", which is not there",
                            "give --data " + info.data_name + " or the directory that holds its files now"));
  }
  const int64_t batch_size = options.batch_size.value_or(info.eval_batch_size);
  if (batch_size < 1) {
    throw UserError(located("command line", 0, "a batch size must be positive", "give e.g. --batch 1000"));
  }
  const std::string device_name = resolve_training_device(options.device);
  const torch::Device device(device_name);
  if (info.precision == Precision::FP16 && !device.is_cuda()) {
    throw UserError(located(info_path.string(), 0,
                            "describes weights trained in fp16, whose autocast runs on a GPU only",
                            "give --device cuda to evaluate them as they were trained"));
  }
  // The algorithms and precision of training, so that its numbers come back.
  const DeterminismScope determinism(device, info.tf32_off);
  const data::DatasetKind& trained_on = data::dataset_kind(info.data_name);
  const std::string data_spec = options.data.value_or(info.data_dir);
  const data::DatasetKind& to_evaluate = data::kind_of_data(data_spec);
  if (to_evaluate.image != trained_on.image || to_evaluate.classes != trained_on.classes) {
    const auto images = [](const data::DatasetKind& kind) {
      return kind.title + "'s " + models::shape_text(kind.image) + " images of " +
             std::to_string(kind.classes) + " classes";
    };
    throw UserError(located(
        info_path.string(), 0,
        "describes a model of " + images(trained_on) + ", and " + data_spec + " holds " + images(to_evaluate),
        "give --data " + trained_on.name + " or a directory of its files"));
  }
  std::shared_ptr<models::Network> model = build_network(info.model, trained_on, info_path.string());
  load_weights(*model, weights.string(), info.model, device);
  model->to(device);
  if (info.channels_last) to_channels_last(*model);
  const LoadedData data = load_data(data_spec, 0, options.limit_test.value_or(info.limit_test));
  CheckpointEvaluation result;
  result.weights_path = weights.string();
  result.model = info.model;
  result.data = data.location.name;
  result.device = device_name;
  result.test = evaluate(*model, data.splits.test, batch_size, device, info.precision, info.channels_last);
  return result;
}

}  // namespace batchscope
