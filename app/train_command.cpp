#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cxxopts.hpp>
#include <iostream>
#include <limits>

#include "app/command_line.h"
#include "app/commands.h"
#include "lib/common/errors.h"
#include "lib/common/words.h"
#include "lib/config/config_names.h"
#include "lib/config/yaml_fields.h"
#include "lib/device/cpu_memory.h"
#include "lib/training/batch_study.h"
#include "lib/training/device_comparison.h"
#include "lib/training/training.h"
#include "models/model_file.h"

namespace batchscope::app {
namespace {

// --target-accuracy as a share: "98%" or "98"; a share such as 0.98 is refused, as it reads as 0.98%.
std::optional<double> target_accuracy(const cxxopts::ParseResult& result) {
  if (!result.count("target-accuracy")) return std::nullopt;
  const std::string text = result["target-accuracy"].as<std::string>();
  const double share = percent_option(result, "target-accuracy", 100);
  const bool percent = text.back() == '%';
  if (share <= 0 || (!percent && share <= 0.01)) {
    refuse("--target-accuracy " + text + (percent ? " is no accuracy to reach" : " reads as " + text + "%"),
           "give the accuracy as a percentage above 0, e.g. --target-accuracy 98%");
  }
  return share;
}

// A word option's value from its table, or a refusal that offers the value meant ("--precision bfloat16":
// bf16), as an experiment file's is.
template <typename E>
E named_option(const std::string& option, const std::string& text, const NameTable<E>& table,
               const std::string& fix) {
  if (const auto value = value_of(table, text)) return *value;
  refuse("--" + option + " " + printable(text) + " is not known",
         yaml_fields::value_fix(text, names(table), fix));
}

OptimizerKind optimizer_kind(const std::string& name) {
  return named_option("optimizer", name, kOptimizers,
                      "use sgd, momentum (0.9), adam or adamw (weight decay 0.01)");
}

int64_t positive_limit(const cxxopts::ParseResult& result, const std::string& name) {
  if (!result.count(name)) return 0;
  return whole_option(result, name, 1, 100000000);
}

// --precision and the loss scaler's options. A scaler setting given where no loss is scaled is refused: on
// one command line it asks for a scaler that will not run.
void read_precision_options(const cxxopts::ParseResult& result, TrainingOptions& o) {
  const std::string precision = result["precision"].as<std::string>();
  o.precision = named_option("precision", precision, kPrecisions, "use fp32, fp16 or bf16");
  const std::string scale = result["loss-scale"].as<std::string>();
  const std::optional<LossScale> scaling =
      named_option("loss-scale", scale, kLossScaleWords, "use auto, dynamic or off");
  o.loss_scale = scaling.value_or(auto_loss_scale(Phase::Train, o.precision));
  for (const char* setting : {"loss-scale-init", "loss-scale-growth-interval"}) {
    if (result.count(setting) && o.loss_scale == LossScale::Off) {
      refuse(std::string("--") + setting + " applies to dynamic loss scaling, which is off for " +
                 to_string(o.precision) + " training" + (scaling.has_value() ? " with --loss-scale off" : ""),
             "add --loss-scale dynamic, or remove it");
    }
  }
  o.loss_scaler.init_scale = real_option(result, "loss-scale-init", 0, std::numeric_limits<float>::max(),
                                         /*least_excluded=*/true);
  o.loss_scaler.growth_interval =
      whole_option(result, "loss-scale-growth-interval", 1, std::numeric_limits<int32_t>::max());
}

std::pair<std::string, std::string> device_pair(const std::string& text) {
  const auto comma = text.find(',');
  const std::string first = text.substr(0, comma);
  const std::string second = comma == std::string::npos ? "" : text.substr(comma + 1);
  if (first.empty() || second.empty() || second.find(',') != std::string::npos) {
    refuse("--compare " + text + " does not name two devices", "give two, e.g. --compare cpu,cuda:0");
  }
  return {first, second};
}

// The epoch table, a line at a time: its header, then a row per epoch.
std::string epoch_table_header() {
  char line[160];
  std::snprintf(line, sizeof line, "%5s  %10s  %9s  %10s  %9s  %9s  %10s\n", "epoch", "train loss",
                "train acc", "test loss", "test acc", "seconds", "samples/s");
  return line;
}

std::string epoch_table_row(const EpochResult& r) {
  char line[160];
  std::snprintf(line, sizeof line, "%5d  %10.4f  %8.2f%%  %10.4f  %8.2f%%  %9.1f  %10.0f", r.epoch,
                r.train_loss, 100 * r.train_accuracy, r.test.loss, 100 * r.test.accuracy, r.epoch_seconds,
                r.samples_per_s);
  std::string row = line;
  // Where a schedule moves the rate: its last step's.
  if (r.lr) {
    std::snprintf(line, sizeof line, "  lr %g", *r.lr);
    row += line;
  }
  // With loss scaling: the scale at the epoch's end and the steps it skipped.
  if (r.skipped_steps) {
    std::snprintf(line, sizeof line, "  loss scale %g, %lld skipped", r.loss_scale.value_or(0),
                  static_cast<long long>(*r.skipped_steps));
    row += line;
  }
  if (r.noise_scale) row += "  " + noise_scale_text(*r.noise_scale);
  if (r.peak_memory_bytes) row += "  peak " + format_memory_size(*r.peak_memory_bytes);
  if (r.energy_j) row += "  " + energy_text(*r.energy_j);
  // With --eval-every: the evaluations within the epoch, and the best of them.
  if (!r.evaluations.empty()) {
    const auto best = std::max_element(
        r.evaluations.begin(), r.evaluations.end(),
        [](const StepEvaluation& a, const StepEvaluation& b) { return a.test.accuracy < b.test.accuracy; });
    std::snprintf(line, sizeof line, "  %zu within, best %.2f%% at step %lld", r.evaluations.size(),
                  100 * best->test.accuracy, static_cast<long long>(best->step));
    row += line;
  }
  return row + "\n";
}

}  // namespace

int run_train_command(const std::vector<std::string>& args) {
  cxxopts::Options options(
      "batchscope train",
      "Train a model of the zoo (or a TorchScript file) on MNIST, Fashion-MNIST, CIFAR-10 or CIFAR-100, "
      "evaluating the test split after every epoch; records, timings and checkpoints go to --out.");
  // clang-format off
  options.add_options()
      ("m,model", "model name or TorchScript file, built for the images and classes of --data (1x28x28 or 3x32x32)", cxxopts::value<std::string>()->default_value("mnist_cnn"))
      ("data", "mnist, fashion-mnist, cifar10, cifar100, or a directory of one's files", cxxopts::value<std::string>()->default_value("mnist"))
      ("epochs", "epochs to train", cxxopts::value<std::string>()->default_value("3"))
      ("b,batch", "training batch size, or several (32,128,512 or 32:4096:x4): a run each in OUT/batch-B and a table and plot of what each took to reach --target-accuracy", cxxopts::value<std::string>()->default_value("64"))
      ("chunk", "gradient accumulation, as one trains a batch larger than fits: each step runs its batch as micro-batches of at most N samples (and the rest), forward and backward each, then one optimizer step; a batch study's sizes up to N train whole (0: every batch whole); auto: before the first step, the largest micro-batch whose training step fits beside the batch (maxbatch's search, 5% of the memory left free), the batch split evenly into as few as fit", cxxopts::value<std::string>()->default_value("0"))
      ("eval-batch", "the test split's evaluation batch size; smaller where the default does not fit beside a model (eval of its checkpoints uses the same, for the same numbers)", cxxopts::value<std::string>()->default_value(std::to_string(kEvalBatchSize)))
      ("d,device", "cpu, cuda, cuda:N, or auto (the first GPU, else the CPU)", cxxopts::value<std::string>()->default_value("auto"))
      ("lr", "learning rate (at --lr-batch where --lr-scaling scales it)", cxxopts::value<std::string>()->default_value("0.01"))
      ("lr-scaling", "none, linear or sqrt: the learning rate at each batch size is --lr times (B / --lr-batch), or its square root", cxxopts::value<std::string>()->default_value("none"))
      ("lr-batch", "the batch size --lr is given for (default: the smallest --batch)", cxxopts::value<std::string>())
      ("lr-warmup", "epochs over which the learning rate rises linearly, step by step, from --lr (the rate at --lr-batch) to the batch size's scaled rate, as Goyal et al. warm up large batches; needs --lr-scaling linear or sqrt", cxxopts::value<std::string>()->default_value("0"))
      ("lr-decay", "none, step:E1,E2,... (times 0.1 after each of those epochs) or cosine (to 0 at the last of --epochs, step by step): the rate after any warm-up", cxxopts::value<std::string>()->default_value("none"))
      ("eval-every", "also evaluate the test split every N optimizer steps within each epoch, outside the epoch's time: --target-accuracy's steps and time at that resolution, not an epoch's (0: at each epoch's end only)", cxxopts::value<std::string>()->default_value("0"))
      ("target-accuracy", "stop at the first epoch whose test accuracy reaches this percentage, e.g. 98%; --epochs is then the most", cxxopts::value<std::string>())
      ("optimizer", "sgd, momentum (0.9), adam or adamw (weight decay 0.01)", cxxopts::value<std::string>()->default_value("momentum"))
      ("momentum", "the momentum of --optimizer momentum", cxxopts::value<std::string>())
      ("weight-decay", "L2 weight decay (adamw: decoupled), e.g. 5e-4 as CIFAR's ResNet recipe has it; default 0, adamw's 0.01", cxxopts::value<std::string>())
      ("precision", "fp32, fp16 (a GPU only) or bf16: the forward pass and loss of each step, and the evaluation, under autocast", cxxopts::value<std::string>()->default_value("fp32"))
      ("loss-scale", "auto, dynamic or off: dynamic loss scaling, as PyTorch's GradScaler; auto is dynamic for fp16, off otherwise", cxxopts::value<std::string>()->default_value("auto"))
      ("loss-scale-init", "dynamic loss scaling: the first scale (GradScaler's init_scale)", cxxopts::value<std::string>()->default_value(std::to_string(static_cast<long long>(LossScalerSettings{}.init_scale))))
      ("loss-scale-growth-interval", "dynamic loss scaling: steps in a row without an overflow before the scale grows (GradScaler's growth_interval)", cxxopts::value<std::string>()->default_value(std::to_string(LossScalerSettings{}.growth_interval)))
      ("channels-last", "the convolutions' weights and each batch NHWC, as a GPU's tensor-core kernels take them (eval follows)")
      ("augment", "auto, none, flip, crop, crop:N or crop+flip: each training image a random crop of itself padded by N pixels (crop: 4), then a left-right flip of half of them, each image drawn on its own; auto is crop+flip on CIFAR-10 and CIFAR-100 (their usual recipe) and none on MNIST and Fashion-MNIST", cxxopts::value<std::string>()->default_value("auto"))
      ("noise-scale", "after each epoch, measure the gradient noise scale B_noise (McCandlish et al.: about the batch size above which more samples per step stop saving steps) on N big batches of the training split, each --noise-group batches of --noise-batch: N x that many forward and backward passes, outside the epoch's time; training is the same with it and without", cxxopts::value<std::string>()->default_value("0"))
      ("noise-group", "--noise-scale's big batch: this many small batches together, against one alone", cxxopts::value<std::string>()->default_value("8"))
      ("noise-batch", "--noise-scale's small batch size (default: the training batch size, or --chunk where the batch accumulates); a smaller one measures a large batch's run for less", cxxopts::value<std::string>())
      ("no-energy", "do not measure the device's energy over each epoch's training (NVML on a GPU, RAPL on the CPU)")
      ("memory-limit", "the memory the device may hold for the run, e.g. 16GiB; more is out of memory (the CPU: LibTorch's counted tensors, the dataset's included; a GPU: its caching allocator, as on a GPU of that much memory); --chunk auto searches within it", cxxopts::value<std::string>())
      ("idle-seconds", "seconds of the device's idle power measured before the first epoch (a batch study: before its first run), for each epoch's energy above idle; 0 for none", cxxopts::value<std::string>()->default_value("2"))
      ("seed", "seeds the weights, dropout, the shuffled order and the augmentation's draws", cxxopts::value<std::string>()->default_value("0"))
      ("threads", threads_help("CPU threads for LibTorch"), cxxopts::value<std::string>())
      ("o,out", "output directory (default runs/train-<model>)", cxxopts::value<std::string>())
      ("limit-train", "train on the first N training images only", cxxopts::value<std::string>())
      ("limit-test", "evaluate on the first N test images only", cxxopts::value<std::string>())
      ("deterministic", "on or off: on a GPU, deterministic cuDNN and algorithms, the same numbers each run (on), or LibTorch's own settings (off): the fastest algorithms, as a user's training runs, for the time to an accuracy it takes; a CPU's numbers are the same either way", cxxopts::value<std::string>()->default_value("on"))
      ("compare", "train on two devices, e.g. cpu,cuda:0, and compare the numbers epoch by epoch; both draw dropout's masks on the host and keep fp32 without TF32, so that only their arithmetic differs (slower on a GPU)", cxxopts::value<std::string>())
      ("force", "replace a complete training run in the output directory (kept in its .replaced until the new one completes)")
      ("q,quiet", "the epoch table at the end only, not a row as each epoch ends")
      ("h,help", "this help");
  // clang-format on
  const auto result = parse_command_line(options, args);
  if (result.count("help")) {
    std::cout
        << options.help()
        << "\nExamples:\n  batchscope train --model mnist_cnn --data mnist --epochs 3 --batch 64 --out "
           "runs/train-mnist\n"
           "  batchscope train --model resnet18 --data cifar10 --epochs 30 --batch 128 --device cuda:0\n"
           "  batchscope train --batch 32:2048:x4 --target-accuracy 98% --epochs 10 --lr-scaling linear "
           "--out "
           "runs/time-to-accuracy\n"
           "  batchscope train --batch 8192 --lr 0.1 --lr-batch 256 --lr-scaling linear --lr-warmup 5 "
           "--lr-decay step:30,60 --epochs 90\n"
           "  batchscope train --model resnet18 --data cifar10 --batch 4096 --chunk 512 --device cuda:0   "
           "# a batch larger than fits, accumulated\n"
           "  batchscope train --model resnet18 --data cifar10 --batch 512:16384:x2 --chunk auto --device cuda:0   "
           "# each size in the largest micro-batches that fit\n"
           "  batchscope train --data mnist --batch 64 --epochs 3 --noise-scale 16 --out runs/noise   # "
           "then: "
           "batchscope analyze SWEEP --noise-scale runs/noise\n"
           "\nA run stopped (Ctrl-C after the running epoch, or killed) goes on after its last complete "
           "epoch "
           "when the same command is run again; a complete run given more --epochs goes on the same way.\n"
           "Exit codes: 0 done, 1 error, 2 bad input, 130 stopped by "
           "Ctrl-C or SIGTERM.\n";
    return 0;
  }
  apply_threads_option(result);
  if (result.count("quiet")) spdlog::set_level(spdlog::level::warn);

  TrainingOptions o;
  o.model = result["model"].as<std::string>();
  o.data = result["data"].as<std::string>();
  o.epochs = static_cast<int>(whole_option(result, "epochs", 1, 100000));
  const std::vector<int64_t> batches = batch_list_option(result, "batch");
  o.batch_size = batches.front();
  const std::string chunk = result["chunk"].as<std::string>();
  o.chunk_auto = chunk == "auto";
  if (!o.chunk_auto) {
    const std::optional<int64_t> samples = whole_number(chunk);
    if (!samples || *samples < 0 || *samples > limits::kMaxBatchSize)
      refuse(
          "--chunk " + printable(chunk) + " is neither auto nor a whole number of samples from 0 to " +
              std::to_string(limits::kMaxBatchSize),
          "give e.g. --chunk 256, 0 for every batch whole, or auto for the largest micro-batches that fit");
    o.chunk = *samples;
  }
  o.eval_batch_size = whole_option(result, "eval-batch", 1, limits::kMaxBatchSize);
  o.device = result["device"].as<std::string>();
  o.optimizer.kind = optimizer_kind(result["optimizer"].as<std::string>());
  if (o.optimizer.kind == OptimizerKind::AdamW) o.optimizer.weight_decay = kAdamWWeightDecay;
  if (result.count("weight-decay")) o.optimizer.weight_decay = real_option(result, "weight-decay", 0, 1);
  if (result.count("momentum")) {
    if (o.optimizer.kind != OptimizerKind::Momentum) {
      refuse("--momentum applies to --optimizer momentum, not " + to_string(o.optimizer.kind),
             "remove --momentum, or give --optimizer momentum");
    }
    o.optimizer.momentum = real_option(result, "momentum", 0, 1, /*least_excluded=*/true);
  }
  o.optimizer.lr = real_option(result, "lr", 0, 1e6, /*least_excluded=*/true);
  read_precision_options(result, o);
  o.seed = seed_option(result, "seed");
  o.channels_last = result.count("channels-last") > 0;
  const std::string augment = result["augment"].as<std::string>();
  if (augment != "auto") {
    o.augment = data::parse_augmentation(augment);
    if (!o.augment) {
      refuse("--augment " + printable(augment) + " is not known",
             "use auto, none, flip, crop, crop:N (N from 1 to " + std::to_string(data::kMostCropPadding) +
                 ") or crop+flip");
    }
  }
  o.noise_scale.groups = whole_option(result, "noise-scale", 0, 100000);
  o.noise_scale.group = whole_option(result, "noise-group", 1, 100000);
  if (result.count("noise-batch"))
    o.noise_scale.batch = whole_option(result, "noise-batch", 1, limits::kMaxBatchSize);
  for (const char* option : {"noise-group", "noise-batch"}) {
    if (result.count(option) && !o.noise_scale.on())
      refuse(std::string("--") + option +
                 " sizes the batches --noise-scale measures, and no --noise-scale is given",
             std::string("add e.g. --noise-scale 8, or remove --") + option);
  }
  o.eval_every = whole_option(result, "eval-every", 0, 100000000);
  o.measure_energy = result.count("no-energy") == 0;
  o.idle_seconds = real_option(result, "idle-seconds", 0, 600);
  o.limit_train = positive_limit(result, "limit-train");
  o.limit_test = positive_limit(result, "limit-test");
  o.target_accuracy = target_accuracy(result);
  o.out_dir = result.count("out") ? result["out"].as<std::string>() : "runs/train-" + models::model_stem(o.model);
  o.force = result.count("force") > 0;
  o.command_line = command_text("train", args);
  const std::string deterministic = result["deterministic"].as<std::string>();
  if (deterministic != "on" && deterministic != "off")
    refuse("--deterministic '" + printable(deterministic) + "' is neither on nor off",
           "give --deterministic on or off");
  o.deterministic = deterministic == "on";
  const std::string scaling_text = result["lr-scaling"].as<std::string>();
  const std::optional<LrScaling> scaling = lr_scaling_from_string(scaling_text);
  if (!scaling) refuse("--lr-scaling " + scaling_text + " is not known", "use none, linear or sqrt");
  const int64_t lr_batch =
      result.count("lr-batch") ? whole_option(result, "lr-batch", 1, limits::kMaxBatchSize) : 0;
  const std::string decay = result["lr-decay"].as<std::string>();
  if (!read_lr_decay(decay, o.lr_schedule)) {
    refuse("--lr-decay " + printable(decay) + " is not known",
           "use none, cosine or step:E1,E2,... with ascending epochs from 1, e.g. --lr-decay step:30,60");
  }
  o.lr_schedule.warmup_epochs = static_cast<int>(whole_option(result, "lr-warmup", 0, 100000));
  o.lr_schedule.warmup_from = o.optimizer.lr;  // the rate at the reference batch size, before scaling
  if (o.lr_schedule.warmup_epochs > 0 && *scaling == LrScaling::None) {
    refuse(
        "--lr-warmup rises from the rate at --lr-batch to a batch size's scaled rate, and --lr-scaling "
        "none scales no rate",
        "give --lr-scaling linear or sqrt");
  }
  if (o.lr_schedule.warmup_epochs > 0 && batches.size() == 1 && lr_batch == 0) {
    refuse("--lr-warmup rises from the rate --lr gives at --lr-batch, and no --lr-batch is given",
           "give --lr-batch, the batch size --lr is given for, e.g. --lr-batch 32");
  }

  if (result.count("memory-limit")) {
    // Before the data is read, so that on the CPU its images count too.
    std::vector<std::string> devices;
    if (result.count("compare")) {
      const auto [first, second] = device_pair(result["compare"].as<std::string>());
      devices = {resolve_training_device(first), resolve_training_device(second)};
    } else {
      devices = {resolve_training_device(o.device)};
    }
    o.memory_limits = apply_memory_limit(result["memory-limit"].as<std::string>(), devices);
  }
  if (result.count("compare")) {
    if (batches.size() > 1) refuse("--compare trains one batch size", "give a single --batch with --compare");
    if (o.target_accuracy) refuse("--compare trains every epoch on both devices", "remove --target-accuracy");
    if (o.chunk_auto)
      refuse("--chunk auto would find each device's own micro-batches, and --compare runs the same on both",
             "give a --chunk of samples, e.g. --chunk 256");
    if (!o.deterministic)
      refuse("--compare needs deterministic runs, so that only the devices' arithmetic differs",
             "leave --deterministic off out");
    const auto [first, second] = device_pair(result["compare"].as<std::string>());
    // The batch size's rate, as a single run trains it.
    if (lr_batch > 0) o.optimizer.lr = scaled_lr(o.optimizer.lr, o.batch_size, lr_batch, *scaling);
    const DeviceComparison comparison = compare_devices(o, first, second);
    std::cout << format_comparison_table(comparison) << "written: " << comparison.jsonl_path << ", "
              << comparison.first.jsonl_path << ", " << comparison.second.jsonl_path << "\n";
    return 0;
  }
  o.stop_requested = [] { return stop_requested().load(); };
  stop_on_signals("this epoch");
  // The table on standard output, each row as its epoch ends (with --quiet, all rows at the end); no
  // log line repeats them.
  const bool quiet = result.count("quiet") > 0;
  if (!quiet) {
    o.on_epoch = [](const EpochResult& r) { std::cout << epoch_table_row(r) << std::flush; };
  } else {
    o.on_epoch = [](const EpochResult&) {};
  }
  const auto print_epochs = [&](const TrainingOutcome& outcome) {
    if (!quiet) return;
    std::cout << epoch_table_header();
    for (const EpochResult& r : outcome.epochs) std::cout << epoch_table_row(r);
  };
  const auto say_stopped = [&](const TrainingOutcome& outcome, const std::string& dir) {
    spdlog::warn("stopped after epoch {} of {}: the same command goes on from {}", outcome.epochs.size(),
                 o.epochs, dir);
    return kExitStopped;
  };

  if (batches.size() > 1) {
    BatchStudyOptions study_options;
    study_options.training = o;
    study_options.batch_sizes = batches;
    study_options.lr_scaling = *scaling;
    study_options.reference_batch = lr_batch;
    // With --quiet, each batch size's epochs are printed at the end.
    if (!quiet) {
      study_options.on_batch = [&](int64_t batch, double lr, const std::string& dir) {
        std::cout << "\nbatch " << batch << " (lr " << lr << ") into " << dir << "\n"
                  << epoch_table_header() << std::flush;
      };
    }
    const BatchStudy study = run_batch_study(study_options);
    if (quiet) {
      for (const BatchStudyRow& row : study.rows) {
        std::cout << "\nbatch " << row.batch_size << " (lr " << row.lr << ") in " << row.dir << "\n";
        print_epochs(row.outcome);
      }
    }
    if (study.stopped) {
      std::cout << "\n" << format_batch_study(study) << std::flush;
      const BatchStudyRow& last = study.rows.back();
      if (last.outcome.stopped) return say_stopped(last.outcome, last.dir);
      // Stopped between two runs: the last one is complete.
      spdlog::warn("stopped after batch {}'s run: the same command goes on from {}", last.batch_size,
                   o.out_dir);
      return kExitStopped;
    }
    std::cout << "\n"
              << format_batch_study(study) << "written: " << study.json_path << ", " << study.markdown_path;
    for (const std::string& file : study.plot_files) std::cout << ", " << file;
    std::cout << "\n";
    if (!study.plot_skipped.empty()) spdlog::warn("no plot: {}", study.plot_skipped);
    for (const std::string& warning : study.plot_warnings) spdlog::warn("{}", warning);
    return 0;
  }
  if (lr_batch > 0) o.optimizer.lr = scaled_lr(o.optimizer.lr, o.batch_size, lr_batch, *scaling);
  if (!quiet) o.on_start = [] { std::cout << epoch_table_header() << std::flush; };
  const TrainingOutcome outcome = train_model(o);
  print_epochs(outcome);
  if (outcome.stopped) return say_stopped(outcome, o.out_dir);
  if (outcome.diverged_epoch) {
    std::cout << "diverged in epoch " << *outcome.diverged_epoch << ": " << divergence_cause(outcome.epochs)
              << ", and the run ended there\n";
  } else if (outcome.target_epoch && outcome.target_step) {
    std::printf(
        "reached %g%% test accuracy at step %lld of epoch %d, after %.2f s of that epoch's training\n",
        100 * *o.target_accuracy, static_cast<long long>(*outcome.target_step), *outcome.target_epoch,
        outcome.target_seconds.value_or(0));
  } else if (outcome.target_epoch) {
    std::cout << "reached " << 100 * *o.target_accuracy << "% test accuracy after epoch "
              << *outcome.target_epoch << "\n";
  } else if (o.target_accuracy) {
    std::cout << "did not reach " << 100 * *o.target_accuracy << "% test accuracy in " << o.epochs
              << " epochs\n";
  }
  std::cout << "written: " << outcome.jsonl_path << ", " << outcome.checkpoint_path << "\n";
  return 0;
}

int run_eval_command(const std::vector<std::string>& args) {
  cxxopts::Options options("batchscope eval",
                           "Evaluate a checkpoint written by batchscope train on the test split.");
  options.positional_help("[CHECKPOINT]");
  // clang-format off
  options.add_options()
      ("checkpoint", "a directory written by batchscope train, or one of its .pt files", cxxopts::value<std::string>())
      ("data", "mnist, fashion-mnist, cifar10, cifar100 or a directory (default: what it was trained on)", cxxopts::value<std::string>())
      ("d,device", "cpu, cuda, cuda:N, or auto", cxxopts::value<std::string>()->default_value("auto"))
      ("b,batch", "evaluation batch size (default: the one training evaluated with, train --eval-batch: the same numbers as its epochs)", cxxopts::value<std::string>())
      ("limit-test", "the first N test images only (default: as in training)", cxxopts::value<std::string>())
      ("threads", threads_help("CPU threads for LibTorch; the same count reproduces training's numbers exactly"), cxxopts::value<std::string>())
      ("json", "print JSON")
      ("h,help", "this help");
  // clang-format on
  options.parse_positional({"checkpoint"});
  const auto result = parse_command_line(options, args);
  if (result.count("help")) {
    std::cout << options.help() << "\nExample: batchscope eval --checkpoint runs/train-mnist\n";
    return 0;
  }
  if (!result.count("checkpoint")) {
    refuse("no checkpoint is given", "name one, e.g. batchscope eval --checkpoint runs/train-mnist_cnn");
  }
  apply_threads_option(result);
  EvalOptions o;
  o.checkpoint = result["checkpoint"].as<std::string>();
  if (result.count("data")) o.data = result["data"].as<std::string>();
  o.device = result["device"].as<std::string>();
  if (result.count("batch")) o.batch_size = whole_option(result, "batch", 1, limits::kMaxBatchSize);
  if (result.count("limit-test")) o.limit_test = positive_limit(result, "limit-test");

  const CheckpointEvaluation e = evaluate_checkpoint(o);
  if (result.count("json")) {
    const nlohmann::ordered_json j = {{"checkpoint", e.weights_path},
                                      {"model", e.model},
                                      {"data", e.data},
                                      {"device", e.device},
                                      {"test_loss", e.test.loss},
                                      {"test_accuracy", e.test.accuracy},
                                      {"test_correct", e.test.correct},
                                      {"test_samples", e.test.samples}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("%s on the %s test split (%s): loss %.4f, accuracy %.2f%% (%lld/%lld)\n", e.model.c_str(),
              e.data.c_str(), e.device.c_str(), e.test.loss, 100 * e.test.accuracy,
              static_cast<long long>(e.test.correct), static_cast<long long>(e.test.samples));
  std::printf("checkpoint: %s\n", e.weights_path.c_str());
  return 0;
}

}  // namespace batchscope::app
