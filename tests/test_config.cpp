#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "lib/common/errors.h"
#include "lib/common/limits.h"
#include "lib/common/words.h"
#include "lib/config/config.h"
#include "lib/config/yaml_fields.h"
#include "models/registry.h"

namespace batchscope {
namespace {

using Sizes = std::vector<int64_t>;

// The UserError message for a bad file (named exp.yaml in messages), or "(accepted)".
std::string error_of(const std::string& yaml, const SweepOverrides& overrides = {}) {
  try {
    parse_sweep_config(yaml, "exp.yaml", overrides);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string error_of_overrides(const SweepOverrides& overrides) {
  try {
    sweep_from_overrides(overrides);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(accepted)";
}

testing::AssertionResult mentions(const std::string& message, const std::vector<std::string>& parts) {
  for (const std::string& part : parts) {
    if (message.find(part) == std::string::npos) {
      return testing::AssertionFailure() << "\"" << message << "\" does not mention \"" << part << "\"";
    }
  }
  return testing::AssertionSuccess();
}

ExperimentConfig only_experiment(const std::string& yaml, const SweepOverrides& overrides = {}) {
  const SweepConfig sweep = parse_sweep_config(yaml, "exp.yaml", overrides);
  EXPECT_EQ(sweep.experiments.size(), 1u);
  return sweep.experiments.at(0);
}

const models::ModelSpec& vgg16() {
  const models::ModelSpec* spec = models::find_model("vgg16");
  if (!spec) throw std::logic_error("the registry has no vgg16");
  return *spec;
}

// A registered model other than vgg16 with a different default input or class count, for overrides.
const models::ModelSpec* another_model() {
  for (const auto& spec : models::all_models()) {
    if (spec.name != "vgg16" &&
        (spec.default_input != vgg16().default_input || spec.default_classes != vgg16().default_classes)) {
      return &spec;
    }
  }
  return nullptr;
}

TEST(Config, FullFileWithEveryKey) {
  const SweepConfig sweep = parse_sweep_config(R"(device: cuda:0
experiments:
  - name: vgg16_adam
    model: vgg16
    input: [3, 64, 64]
    classes: 10
    batch: 1:64:8
    phase: train
    optimizer: {type: adam, lr: 0.001, weight_decay: 0.0005, betas: [0.8, 0.99], eps: 1e-6}
    precision: bf16
    channels_last: true
    cudnn_benchmark: yes
    warmup: 2
    steps: 7
    order: shuffled
    data: synthetic
    seed: 42
    device: cuda:1
)",
                                               "exp.yaml");
  EXPECT_EQ(sweep.source, "exp.yaml");
  ASSERT_EQ(sweep.experiments.size(), 1u);
  const ExperimentConfig& e = sweep.experiments[0];
  EXPECT_EQ(e.name, "vgg16_adam");
  EXPECT_EQ(e.model, "vgg16");
  EXPECT_EQ(e.input_shape, (Sizes{3, 64, 64}));
  EXPECT_EQ(e.classes, 10);
  EXPECT_EQ(e.batch_sizes, (Sizes{1, 9, 17, 25, 33, 41, 49, 57}));
  EXPECT_EQ(e.phase, Phase::Train);
  EXPECT_EQ(e.optimizer.kind, OptimizerKind::Adam);
  EXPECT_DOUBLE_EQ(e.optimizer.lr, 0.001);
  EXPECT_DOUBLE_EQ(e.optimizer.weight_decay, 0.0005);
  EXPECT_DOUBLE_EQ(e.optimizer.beta1, 0.8);
  EXPECT_DOUBLE_EQ(e.optimizer.beta2, 0.99);
  EXPECT_DOUBLE_EQ(e.optimizer.eps, 1e-6);
  EXPECT_EQ(e.precision, Precision::BF16);
  EXPECT_TRUE(e.channels_last);
  EXPECT_TRUE(e.cudnn_benchmark);
  EXPECT_EQ(e.warmup_steps, 2);
  EXPECT_EQ(e.timed_steps, 7);
  EXPECT_EQ(e.order, BatchOrder::Shuffled);
  EXPECT_EQ(e.data, "synthetic");
  EXPECT_EQ(e.seed, 42u);
  EXPECT_EQ(e.device, "cuda:1");
}

TEST(Config, UnsetKeysTakeTheirDefaults) {
  const ExperimentConfig e = only_experiment("experiments:\n  - {model: vgg16, batch: 4}\n");
  EXPECT_EQ(e.name, "vgg16_train_fp32");
  EXPECT_EQ(e.input_shape, vgg16().default_input);
  EXPECT_EQ(e.classes, vgg16().default_classes);
  EXPECT_EQ(e.batch_sizes, Sizes{4});
  EXPECT_EQ(e.phase, Phase::Train);
  EXPECT_EQ(e.optimizer.kind, OptimizerKind::SGD);
  EXPECT_DOUBLE_EQ(e.optimizer.lr, 0.01);
  EXPECT_EQ(e.precision, Precision::FP32);
  EXPECT_FALSE(e.channels_last);
  EXPECT_FALSE(e.cudnn_benchmark);
  EXPECT_EQ(e.warmup_steps, 5);
  EXPECT_EQ(e.timed_steps, 20);
  EXPECT_EQ(e.order, BatchOrder::Ascending);
  EXPECT_EQ(e.data, "synthetic");
  EXPECT_EQ(e.seed, 0u);
  EXPECT_EQ(e.device, "auto");
}

TEST(Config, DefaultsApplyToEveryExperimentUnlessItSetsTheKey) {
  const SweepConfig sweep = parse_sweep_config(R"(device: cuda
defaults:
  model: vgg16
  warmup: 1
  steps: 3
  optimizer: adam
experiments:
  - batch: 1:2
  - name: second
    batch: 8
    steps: 9
    device: cpu
    optimizer: {type: momentum, momentum: 0.5}
)",
                                               "exp.yaml");
  ASSERT_EQ(sweep.experiments.size(), 2u);
  const ExperimentConfig& first = sweep.experiments[0];
  const ExperimentConfig& second = sweep.experiments[1];
  EXPECT_EQ(first.model, "vgg16");
  EXPECT_EQ(first.warmup_steps, 1);
  EXPECT_EQ(first.timed_steps, 3);
  EXPECT_EQ(first.device, "cuda");
  EXPECT_EQ(first.optimizer.kind, OptimizerKind::Adam);
  EXPECT_EQ(second.model, "vgg16");
  EXPECT_EQ(second.warmup_steps, 1);
  EXPECT_EQ(second.timed_steps, 9);
  EXPECT_EQ(second.device, "cpu");
  EXPECT_EQ(second.optimizer.kind, OptimizerKind::Momentum);
  EXPECT_DOUBLE_EQ(second.optimizer.momentum, 0.5);
}

// An experiment's own key replaces the default for that experiment alone: the experiments after it take
// the default again (assigning to a copied YAML node would have written through to the default).
TEST(Config, AnExperimentsOwnKeyLeavesTheDefaultForTheExperimentsAfterIt) {
  const SweepConfig sweep = parse_sweep_config(R"(device: cpu
defaults:
  model: mnist_cnn
  batch: 1:2
  warmup: 5
  precision: fp16
  optimizer: {type: sgd, lr: 0.01}
  loss_scale: {type: dynamic, growth_interval: 100}
experiments:
  - name: own
    warmup: 2
    device: auto
    optimizer: {type: adam, lr: 0.5}
    loss_scale: off
  - name: defaulted
  - name: own_again
    warmup: 7
  - name: defaulted_again
)",
                                               "exp.yaml");
  ASSERT_EQ(sweep.experiments.size(), 4u);
  const ExperimentConfig& own = sweep.experiments[0];
  EXPECT_EQ(own.warmup_steps, 2);
  EXPECT_EQ(own.device, "auto");
  EXPECT_EQ(own.optimizer.kind, OptimizerKind::Adam);
  EXPECT_DOUBLE_EQ(own.optimizer.lr, 0.5);
  EXPECT_EQ(own.loss_scale, LossScale::Off);
  EXPECT_EQ(sweep.experiments[2].warmup_steps, 7);
  for (const size_t i : {size_t{1}, size_t{3}}) {
    const ExperimentConfig& e = sweep.experiments[i];
    SCOPED_TRACE(e.name);
    EXPECT_EQ(e.warmup_steps, 5);
    EXPECT_EQ(e.device, "cpu");
    EXPECT_EQ(e.optimizer.kind, OptimizerKind::SGD);
    EXPECT_DOUBLE_EQ(e.optimizer.lr, 0.01);
    EXPECT_EQ(e.loss_scale, LossScale::Dynamic);
    EXPECT_EQ(e.loss_scaler.growth_interval, 100);
  }
}

TEST(Config, SingleExperimentAtTheTopLevel) {
  const ExperimentConfig e = only_experiment("model: vgg16\nbatch: [2, 4]\nphase: infer\ndevice: cuda:3\n");
  EXPECT_EQ(e.name, "vgg16_infer_fp32");
  EXPECT_EQ(e.batch_sizes, (Sizes{2, 4}));
  EXPECT_EQ(e.phase, Phase::Infer);
  EXPECT_EQ(e.device, "cuda:3");
}

TEST(Config, BatchForms) {
  const auto sizes = [](const std::string& batch) {
    return only_experiment("model: vgg16\nbatch: " + batch + "\n").batch_sizes;
  };
  EXPECT_EQ(sizes("70"), Sizes{70});
  EXPECT_EQ(sizes("1:4"), (Sizes{1, 2, 3, 4}));
  EXPECT_EQ(sizes("\"1:64:8\""), (Sizes{1, 9, 17, 25, 33, 41, 49, 57}));
  EXPECT_EQ(sizes("1,8,32"), (Sizes{1, 8, 32}));
  EXPECT_EQ(sizes("[32, 1, 8]"), (Sizes{32, 1, 8}));
  EXPECT_EQ(sizes("{from: 2, to: 5}"), (Sizes{2, 3, 4, 5}));
  EXPECT_EQ(sizes("{from: 1, to: 64, step: 8}"), (Sizes{1, 9, 17, 25, 33, 41, 49, 57}));
  EXPECT_EQ(sizes("\n  - 3\n  - 6"), (Sizes{3, 6}));
  EXPECT_EQ(sizes("\"1:100:x4\""), (Sizes{1, 4, 16, 64, 100}));
  EXPECT_EQ(sizes("{from: 1, to: 20, factor: 3}"), (Sizes{1, 3, 9, 20}));
}

TEST(Config, BatchUpToTheLargestThatFits) {
  const ExperimentConfig plain = only_experiment("model: vgg16\nbatch: \"1:max\"\n");
  EXPECT_TRUE(plain.batch_sizes.empty());
  ASSERT_TRUE(plain.batch_to_max.has_value());
  EXPECT_EQ(*plain.batch_to_max, (BatchToMax{1, 1, 0}));
  EXPECT_EQ(*only_experiment("model: vgg16\nbatch: \"4:max:x2\"\n").batch_to_max, (BatchToMax{4, 1, 2.0}));
  EXPECT_EQ(*only_experiment("model: vgg16\nbatch: {from: 8, to: max, step: 8}\n").batch_to_max,
            (BatchToMax{8, 8, 0}));
  const nlohmann::json j = to_json(only_experiment("model: vgg16\nbatch: {from: 2, to: max, factor: 1.5}\n"));
  EXPECT_EQ(j.at("batch_to_max").at("factor"), 1.5);
  EXPECT_EQ(*experiment_from_json(j).batch_to_max, (BatchToMax{2, 1, 1.5}));
}

TEST(Config, RealDataSetsTheImageShapeAndClasses) {
  const ExperimentConfig e =
      only_experiment("model: mnist_cnn\nbatch: 1:4\ndata: fashion-mnist\ntransfer: included\n");
  EXPECT_EQ(e.data, "fashion-mnist");
  EXPECT_EQ(e.input_shape, (Sizes{1, 28, 28}));
  EXPECT_EQ(e.classes, 10);
  EXPECT_EQ(e.transfer, Transfer::Included);
  EXPECT_EQ(only_experiment("model: mnist_cnn\nbatch: 1:4\n").transfer, Transfer::Excluded);
  const ExperimentConfig chunked =
      only_experiment("model: mnist_cnn\nbatch: 1:4\nphase: infer\nchunk: 1000\n");
  EXPECT_EQ(chunked.chunk, 1000);
  EXPECT_EQ(to_json(chunked).at("chunk"), 1000);
  EXPECT_EQ(to_json(e).at("transfer"), "included");
  SweepOverrides o;
  o.model = "mnist_cnn";
  o.batch = "1:4";
  o.data = "mnist";
  o.transfer = "included";
  const ExperimentConfig cli = sweep_from_overrides(o).experiments.at(0);
  EXPECT_EQ(cli.data, "mnist");
  EXPECT_EQ(cli.transfer, Transfer::Included);
}

TEST(Config, CifarSetsItsColourImagesAndItsClasses) {
  const ExperimentConfig ten = only_experiment("model: vgg16\nbatch: 1:4\ndata: cifar10\n");
  EXPECT_EQ(ten.input_shape, (Sizes{3, 32, 32}));
  EXPECT_EQ(ten.classes, 10);
  const ExperimentConfig hundred =
      only_experiment("model: resnet18\nbatch: 1:4\ndata: cifar100\ninput: [3, 32, 32]\nclasses: 100\n");
  EXPECT_EQ(hundred.input_shape, (Sizes{3, 32, 32}));
  EXPECT_EQ(hundred.classes, 100);
  SweepOverrides o;
  o.model = "vgg16";
  o.batch = "1:4";
  o.data = "cifar100";
  const ExperimentConfig cli = sweep_from_overrides(o).experiments.at(0);
  EXPECT_EQ(cli.input_shape, (Sizes{3, 32, 32}));
  EXPECT_EQ(cli.classes, 100);
}

TEST(Config, Tf32FromTheFileOrTheCommandLine) {
  const ExperimentConfig off = only_experiment("model: vgg16\nbatch: 1:4\ntf32: off\n");
  EXPECT_EQ(off.tf32, Tf32::Off);
  EXPECT_EQ(to_json(off).at("tf32"), "off");
  EXPECT_EQ(experiment_from_json(to_json(off)).tf32, Tf32::Off);
  // LibTorch's default is not written: records of runs with it stay as they were.
  const ExperimentConfig plain = only_experiment("model: vgg16\nbatch: 1:4\n");
  EXPECT_EQ(plain.tf32, Tf32::Default);
  EXPECT_FALSE(to_json(plain).contains("tf32"));
  EXPECT_EQ(experiment_from_json(to_json(plain)).tf32, Tf32::Default);
  SweepOverrides o;
  o.model = "vgg16";
  o.batch = "1:4";
  o.tf32 = "on";
  EXPECT_EQ(sweep_from_overrides(o).experiments.at(0).tf32, Tf32::On);
}

// auto (or nothing) scales the loss where PyTorch users do, in fp16 training; either choice can be forced.
TEST(Config, LossScaleIsDynamicForFp16TrainingUnlessSetOtherwise) {
  const auto scale_of = [](const std::string& yaml, const SweepOverrides& o = {}) {
    return only_experiment("model: vgg16\nbatch: 1:4\n" + yaml, o).loss_scale;
  };
  EXPECT_EQ(scale_of("precision: fp16\n"), LossScale::Dynamic);
  EXPECT_EQ(scale_of("precision: fp16\nloss_scale: auto\n"), LossScale::Dynamic);
  EXPECT_EQ(scale_of("precision: fp16\nphase: infer\n"), LossScale::Off);
  EXPECT_EQ(scale_of("precision: bf16\n"), LossScale::Off);
  EXPECT_EQ(scale_of(""), LossScale::Off);
  EXPECT_EQ(scale_of("precision: fp16\nloss_scale: off\n"), LossScale::Off);
  EXPECT_EQ(scale_of("loss_scale: dynamic\n"), LossScale::Dynamic);
  SweepOverrides o;
  o.loss_scale = "off";
  o.precision = "fp16";
  EXPECT_EQ(scale_of("loss_scale: dynamic\n", o), LossScale::Off);

  // Written only where the loss is scaled: unscaled records (all of them before this) stay as they were.
  const ExperimentConfig scaled = only_experiment("model: vgg16\nbatch: 1:4\nprecision: fp16\n");
  EXPECT_EQ(to_json(scaled).at("loss_scale"), "dynamic");
  EXPECT_EQ(experiment_from_json(to_json(scaled)).loss_scale, LossScale::Dynamic);
  const ExperimentConfig unscaled =
      only_experiment("model: vgg16\nbatch: 1:4\nprecision: fp16\nloss_scale: off\n");
  EXPECT_FALSE(to_json(unscaled).contains("loss_scale"));
  EXPECT_EQ(experiment_from_json(to_json(unscaled)).loss_scale, LossScale::Off);
}

// Every experiment file the project ships reads as it stands: configs/ is what the README points users at.
TEST(Config, EveryShippedExperimentFileReads) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(BATCHSCOPE_SOURCE_DIR) + "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    SweepConfig sweep;
    ASSERT_NO_THROW(sweep = load_sweep_config(entry.path().string()));
    EXPECT_FALSE(sweep.experiments.empty());
  }
  EXPECT_GE(files, 6);
}

// The scaler's settings are GradScaler's unless a loss_scale map gives others; --loss-scale replaces the
// map's type only, and --loss-scale-init and --loss-scale-growth-interval replace two settings.
TEST(Config, TheLossScalersSettingsAreGradScalersUnlessGiven) {
  const auto scaler_of = [](const std::string& yaml, const SweepOverrides& o = {}) {
    return only_experiment("model: vgg16\nbatch: 1:4\n" + yaml, o);
  };
  const ExperimentConfig plain = scaler_of("precision: fp16\n");
  EXPECT_EQ(plain.loss_scaler, LossScalerSettings{});
  EXPECT_EQ(plain.loss_scaler.init_scale, 65536.0);
  EXPECT_EQ(plain.loss_scaler.growth_interval, 2000);
  EXPECT_EQ(loss_scaler_words(plain.loss_scaler), "");

  const std::string map =
      "precision: fp16\nloss_scale: {init_scale: 1024, growth_factor: 4, backoff_factor: 0.25, "
      "growth_interval: 100}\n";
  const ExperimentConfig given = scaler_of(map);
  EXPECT_EQ(given.loss_scale, LossScale::Dynamic);  // no type: auto, dynamic for fp16
  EXPECT_EQ(given.loss_scaler, (LossScalerSettings{1024, 4, 0.25, 100}));
  EXPECT_EQ(loss_scaler_words(given.loss_scaler),
            "init_scale 1024, growth_factor 4, backoff_factor 0.25, growth_interval 100");
  EXPECT_EQ(scaler_of("loss_scale: {type: dynamic, init_scale: 8}\n").loss_scale, LossScale::Dynamic);

  SweepOverrides o;
  o.loss_scale_init = "512";
  o.loss_scale_growth_interval = "7";
  EXPECT_EQ(scaler_of(map, o).loss_scaler, (LossScalerSettings{512, 4, 0.25, 7}));
  EXPECT_EQ(scaler_of("precision: fp16\n", o).loss_scaler, (LossScalerSettings{512, 2, 0.5, 7}));
  SweepOverrides dynamic;
  dynamic.loss_scale = "dynamic";
  const ExperimentConfig kept = scaler_of(map + "phase: train\n", dynamic);
  EXPECT_EQ(kept.loss_scale, LossScale::Dynamic);
  EXPECT_EQ(kept.loss_scaler.init_scale, 1024.0) << "--loss-scale keeps the file's settings";
  EXPECT_EQ(kept.origins.at("loss_scale").label, "--loss-scale");

  // Where auto leaves the loss unscaled, or the command line turns the file's scaler off, the settings
  // serve other experiments and are ignored.
  EXPECT_EQ(scaler_of("loss_scale: {init_scale: 1024}\n").loss_scale, LossScale::Off);
  EXPECT_EQ(scaler_of("precision: bf16\n", o).loss_scale, LossScale::Off);
  SweepOverrides off;
  off.loss_scale = "off";
  EXPECT_EQ(scaler_of(map, off).loss_scale, LossScale::Off);

  // Recorded with the scaled experiment, and read back; a record from before has GradScaler's.
  const nlohmann::json j = to_json(given);
  EXPECT_EQ(j.at("loss_scaler").at("init_scale"), 1024.0);
  EXPECT_EQ(j.at("loss_scaler").at("growth_interval"), 100);
  EXPECT_EQ(experiment_from_json(j).loss_scaler, given.loss_scaler);
  nlohmann::json before = j;
  before.erase("loss_scaler");
  EXPECT_EQ(experiment_from_json(before).loss_scaler, LossScalerSettings{});
  EXPECT_EQ(to_json(plain).at("loss_scaler").at("init_scale"), 65536.0);
  EXPECT_FALSE(to_json(scaler_of("loss_scale: {init_scale: 1024}\n")).contains("loss_scaler"));
}

// foreach: auto (none) is decided where the device is known; on and off are kept as given.
TEST(Config, OptimizerForeachFromTheFileOrTheCommandLine) {
  const auto foreach_of = [](const std::string& yaml, const SweepOverrides& o = {}) {
    return only_experiment("model: vgg16\nbatch: 1:4\n" + yaml, o).optimizer.foreach;
  };
  EXPECT_EQ(foreach_of(""), std::nullopt);
  EXPECT_EQ(foreach_of("optimizer: {type: momentum, foreach: auto}\n"), std::nullopt);
  EXPECT_EQ(foreach_of("optimizer: {type: momentum, foreach: on}\n"), std::optional<bool>(true));
  EXPECT_EQ(foreach_of("optimizer: {type: adam, foreach: off}\n"), std::optional<bool>(false));
  SweepOverrides o;
  o.foreach = "on";
  EXPECT_EQ(foreach_of("optimizer: {type: sgd, foreach: off}\n", o), std::optional<bool>(true));
  EXPECT_EQ(foreach_of("optimizer: adam\n", o), std::optional<bool>(true));

  // Written only where the step is multi-tensor; records without it (all before it) ran the loop.
  const ExperimentConfig on = only_experiment("model: vgg16\nbatch: 1:4\noptimizer: {foreach: on}\n");
  EXPECT_EQ(to_json(on).at("optimizer").at("foreach"), true);
  EXPECT_EQ(experiment_from_json(to_json(on)).optimizer.foreach, std::optional<bool>(true));
  const ExperimentConfig off = only_experiment("model: vgg16\nbatch: 1:4\noptimizer: {foreach: off}\n");
  EXPECT_FALSE(to_json(off).at("optimizer").contains("foreach"));
  EXPECT_EQ(experiment_from_json(to_json(off)).optimizer.foreach, std::optional<bool>(false));
}

// AdamW decays its weights by 0.01 unless told otherwise, as PyTorch's does; a decay given in the file is
// kept when the command line chooses adamw, and the record keeps its betas and eps as Adam's.
TEST(Config, AdamWDecaysByDefaultAndKeepsAGivenDecay) {
  const auto optimizer_of = [](const std::string& yaml, const SweepOverrides& o = {}) {
    return only_experiment("model: vgg16\nbatch: 1:4\n" + yaml, o).optimizer;
  };
  EXPECT_EQ(optimizer_of("optimizer: adamw\n").kind, OptimizerKind::AdamW);
  EXPECT_DOUBLE_EQ(optimizer_of("optimizer: adamw\n").weight_decay, 0.01);
  EXPECT_DOUBLE_EQ(optimizer_of("optimizer: {type: adamw, lr: 0.001}\n").weight_decay, 0.01);
  EXPECT_DOUBLE_EQ(optimizer_of("optimizer: {type: adamw, weight_decay: 0}\n").weight_decay, 0.0);
  EXPECT_DOUBLE_EQ(optimizer_of("optimizer: adam\n").weight_decay, 0.0);
  SweepOverrides o;
  o.optimizer = "adamw";
  EXPECT_DOUBLE_EQ(optimizer_of("", o).weight_decay, 0.01);
  EXPECT_DOUBLE_EQ(optimizer_of("optimizer: {type: adam, weight_decay: 0.05}\n", o).weight_decay, 0.05);

  const ExperimentConfig e =
      only_experiment("model: vgg16\nbatch: 1:4\noptimizer: {type: adamw, betas: [0.8, 0.99]}\n");
  const nlohmann::json j = to_json(e).at("optimizer");
  EXPECT_EQ(j.at("type"), "adamw");
  EXPECT_EQ(j.at("weight_decay"), 0.01);
  EXPECT_EQ(j.at("betas"), (nlohmann::json{0.8, 0.99}));
  EXPECT_TRUE(j.contains("eps"));
  EXPECT_FALSE(j.contains("momentum"));
  const ExperimentConfig back = experiment_from_json(to_json(e));
  EXPECT_EQ(back.optimizer.kind, OptimizerKind::AdamW);
  EXPECT_DOUBLE_EQ(back.optimizer.weight_decay, 0.01);
  EXPECT_DOUBLE_EQ(back.optimizer.beta1, 0.8);
}

TEST(Config, SequenceLengthSetsTheSequenceAxisOfTheInput) {
  EXPECT_EQ(only_experiment("model: lstm_lm\nbatch: 1:4\nseq_len: 70\n").input_shape, (Sizes{70}));
  EXPECT_EQ(only_experiment("model: deepspeech2\nbatch: 1:4\nseq_len: 300\n").input_shape,
            (Sizes{1, 161, 300}));
  EXPECT_EQ(only_experiment("model: lstm_lm\nbatch: 1:4\ninput: [12]\n").input_shape, (Sizes{12}));
  SweepOverrides o;
  o.seq_len = 64;
  const ExperimentConfig cli = only_experiment("model: transformer\nbatch: 1:4\nseq_len: 32\n", o);
  EXPECT_EQ(cli.input_shape, (Sizes{64}));
  EXPECT_EQ(to_json(cli).at("input"), nlohmann::json::array({64}));
}

TEST(ConfigErrors, SequenceLengthOnlyForSequenceModels) {
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1:4\nseq_len: 35\n"),
                       {"exp.yaml:3", "vgg16 takes no sequences", "seq_len", "lstm_lm", "transformer"}));
  EXPECT_TRUE(mentions(error_of("model: lstm_lm\nbatch: 1:4\nseq_len: 0\n"), {"exp.yaml:3", "seq_len"}));
  EXPECT_TRUE(mentions(error_of("model: lstm_lm\nbatch: 1:4\ndata: mnist\n"),
                       {"exp.yaml:3", "lstm_lm takes", "data: synthetic"}));
  EXPECT_TRUE(mentions(error_of("model: lstm_lm\nbatch: 1:4\ninput: [3, 224, 224]\n"),
                       {"exp.yaml:3", "input", "lstm_lm"}));
}

TEST(Config, OptimizerForms) {
  EXPECT_EQ(only_experiment("model: vgg16\nbatch: 1\noptimizer: momentum\n").optimizer.kind,
            OptimizerKind::Momentum);
  const OptimizerConfig o =
      only_experiment("model: vgg16\nbatch: 1\noptimizer:\n  type: sgd\n  lr: 0.5\n  weight_decay: 0.1\n")
          .optimizer;
  EXPECT_EQ(o.kind, OptimizerKind::SGD);
  EXPECT_DOUBLE_EQ(o.lr, 0.5);
  EXPECT_DOUBLE_EQ(o.weight_decay, 0.1);
  EXPECT_EQ(only_experiment("model: vgg16\nbatch: 1\noptimizer: {lr: 0.2}\n").optimizer.kind,
            OptimizerKind::SGD);
  // One map may carry every type's keys; those the type does not use are kept and ignored.
  const OptimizerConfig m = only_experiment(
                                "model: vgg16\nbatch: 1\noptimizer: {type: momentum, momentum: 0.8, "
                                "betas: [0.5, 0.6], eps: 0.001}\n")
                                .optimizer;
  EXPECT_EQ(m.kind, OptimizerKind::Momentum);
  EXPECT_DOUBLE_EQ(m.momentum, 0.8);
  EXPECT_DOUBLE_EQ(m.beta1, 0.5);
  EXPECT_DOUBLE_EQ(m.eps, 0.001);
}

TEST(Config, AutoDeviceIsKeptForTheSweepToResolve) {
  EXPECT_EQ(only_experiment("device: auto\nmodel: vgg16\nbatch: 1\n").device, "auto");
}

// The configs shipped in configs/ must stay loadable as the format changes.
TEST(Config, ShippedConfigsLoad) {
  const std::filesystem::path dir = std::filesystem::path(__FILE__).parent_path().parent_path() / "configs";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no configs/ next to the tests";
  int loaded = 0;
  for (const auto& file : std::filesystem::directory_iterator(dir)) {
    if (file.path().extension() != ".yaml") continue;
    EXPECT_NO_THROW(EXPECT_FALSE(load_sweep_config(file.path().string()).experiments.empty())) << file.path();
    ++loaded;
  }
  EXPECT_GT(loaded, 0);
}

TEST(Config, OverridesWinOverTheFile) {
  SweepOverrides o;
  o.device = "cuda:2";
  o.batch = "1,2";
  o.phase = "infer";
  o.precision = "fp16";
  o.optimizer = "adam";
  o.order = "shuffled";
  o.data = "synthetic";
  o.input_shape = Sizes{3, 32, 32};
  o.classes = 7;
  o.warmup_steps = 0;
  o.timed_steps = 1;
  o.seed = 99;
  o.lr = 0.25;
  o.channels_last = true;
  o.cudnn_benchmark = true;
  const SweepConfig sweep = parse_sweep_config(R"(defaults: {steps: 30, device: cpu}
experiments:
  - {model: vgg16, batch: 1:70, phase: train, optimizer: {type: sgd, lr: 0.01}, warmup: 9, seed: 3}
  - {name: other, model: vgg16, batch: 4, precision: bf16, channels_last: false}
)",
                                               "exp.yaml", o);
  ASSERT_EQ(sweep.experiments.size(), 2u);
  for (const ExperimentConfig& e : sweep.experiments) {
    EXPECT_EQ(e.device, "cuda:2");
    EXPECT_EQ(e.batch_sizes, (Sizes{1, 2}));
    EXPECT_EQ(e.phase, Phase::Infer);
    EXPECT_EQ(e.precision, Precision::FP16);
    EXPECT_EQ(e.optimizer.kind, OptimizerKind::Adam);
    EXPECT_DOUBLE_EQ(e.optimizer.lr, 0.25);
    EXPECT_EQ(e.order, BatchOrder::Shuffled);
    EXPECT_EQ(e.input_shape, (Sizes{3, 32, 32}));
    EXPECT_EQ(e.classes, 7);
    EXPECT_EQ(e.warmup_steps, 0);
    EXPECT_EQ(e.timed_steps, 1);
    EXPECT_EQ(e.seed, 99u);
    EXPECT_TRUE(e.channels_last);
    EXPECT_TRUE(e.cudnn_benchmark);
  }
  // A generated name follows the overridden phase and precision; a given name stays.
  EXPECT_EQ(sweep.experiments[0].name, "vgg16_infer_fp16");
  EXPECT_EQ(sweep.experiments[1].name, "other");
}

TEST(Config, ModelOverrideTakesTheNewModelsDefaults) {
  const models::ModelSpec* other = another_model();
  if (!other) GTEST_SKIP() << "the registry has no second model with other defaults";
  SweepOverrides o;
  o.model = other->name;
  const ExperimentConfig e = only_experiment("model: vgg16\nbatch: 2\n", o);
  EXPECT_EQ(e.model, other->name);
  EXPECT_EQ(e.input_shape, other->default_input);
  EXPECT_EQ(e.classes, other->default_classes);
  EXPECT_EQ(e.name, other->name + "_train_fp32");
}

TEST(Config, OverrideFillsAKeyTheFileLacks) {
  SweepOverrides o;
  o.batch = "3";
  EXPECT_EQ(only_experiment("model: vgg16\n", o).batch_sizes, Sizes{3});
}

TEST(Config, SweepFromOverridesAlone) {
  SweepOverrides o;
  o.model = "vgg16";
  o.batch = "1:3";
  o.timed_steps = 4;
  const SweepConfig sweep = sweep_from_overrides(o);
  EXPECT_EQ(sweep.source, "command line");
  ASSERT_EQ(sweep.experiments.size(), 1u);
  EXPECT_EQ(sweep.experiments[0].name, "vgg16_train_fp32");
  EXPECT_EQ(sweep.experiments[0].batch_sizes, (Sizes{1, 2, 3}));
  EXPECT_EQ(sweep.experiments[0].timed_steps, 4);
  EXPECT_EQ(sweep.experiments[0].input_shape, vgg16().default_input);
}

TEST(Config, LoadsAFile) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "batchscope_test_config.yaml";
  std::ofstream(path) << "model: vgg16\nbatch: 5\n";
  const SweepConfig sweep = load_sweep_config(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(sweep.source, path.string());
  ASSERT_EQ(sweep.experiments.size(), 1u);
  EXPECT_EQ(sweep.experiments[0].batch_sizes, Sizes{5});
}

TEST(Config, JsonRoundTripKeepsEveryField) {
  ExperimentConfig e;
  e.name = "resnet_x";
  e.model = "vgg16";
  e.input_shape = {3, 40, 50};
  e.classes = 17;
  e.batch_sizes = {9, 1, 33};
  e.phase = Phase::Infer;
  e.optimizer = {OptimizerKind::Adam, 0.123, 0.77, 0.0001, 0.81, 0.9991, 3e-7};
  e.precision = Precision::FP16;
  e.channels_last = true;
  e.cudnn_benchmark = true;
  e.warmup_steps = 3;
  e.timed_steps = 11;
  e.order = BatchOrder::Shuffled;
  e.data = "fashion-mnist";
  e.transfer = Transfer::Included;
  e.chunk = 512;
  e.batch_to_max = BatchToMax{3, 2, 0};
  e.seed = 18446744073709551615ull;
  e.device = "cuda:1";

  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j.at("phase"), "infer");
  EXPECT_EQ(j.at("precision"), "fp16");
  EXPECT_EQ(j.at("order"), "shuffled");
  EXPECT_EQ(j.at("optimizer").at("type"), "adam");
  const ExperimentConfig back = experiment_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.name, e.name);
  EXPECT_EQ(back.model, e.model);
  EXPECT_EQ(back.input_shape, e.input_shape);
  EXPECT_EQ(back.classes, e.classes);
  EXPECT_EQ(back.batch_sizes, e.batch_sizes);
  EXPECT_EQ(back.phase, e.phase);
  EXPECT_EQ(back.optimizer.kind, e.optimizer.kind);
  EXPECT_EQ(back.optimizer.lr, e.optimizer.lr);
  EXPECT_EQ(back.optimizer.momentum, OptimizerConfig{}.momentum);  // Adam has none: not kept
  EXPECT_EQ(back.optimizer.weight_decay, e.optimizer.weight_decay);
  EXPECT_EQ(back.optimizer.beta1, e.optimizer.beta1);
  EXPECT_EQ(back.optimizer.beta2, e.optimizer.beta2);
  EXPECT_EQ(back.optimizer.eps, e.optimizer.eps);
  EXPECT_EQ(back.precision, e.precision);
  EXPECT_EQ(back.channels_last, e.channels_last);
  EXPECT_EQ(back.cudnn_benchmark, e.cudnn_benchmark);
  EXPECT_EQ(back.warmup_steps, e.warmup_steps);
  EXPECT_EQ(back.timed_steps, e.timed_steps);
  EXPECT_EQ(back.order, e.order);
  EXPECT_EQ(back.data, e.data);
  EXPECT_EQ(back.transfer, e.transfer);
  EXPECT_EQ(back.chunk, e.chunk);
  EXPECT_EQ(back.batch_to_max, e.batch_to_max);
  EXPECT_EQ(back.seed, e.seed);
  EXPECT_EQ(back.device, e.device);
  EXPECT_EQ(to_json(back), j);
}

TEST(Config, JsonRoundTripOfEveryEnumValue) {
  for (Phase p : {Phase::Train, Phase::Infer})
    for (Precision q : {Precision::FP32, Precision::FP16, Precision::BF16})
      for (OptimizerKind k :
           {OptimizerKind::SGD, OptimizerKind::Momentum, OptimizerKind::Adam, OptimizerKind::AdamW})
        for (BatchOrder o : {BatchOrder::Ascending, BatchOrder::Shuffled}) {
          ExperimentConfig e;
          e.phase = p;
          e.precision = q;
          e.optimizer.kind = k;
          e.order = o;
          EXPECT_EQ(to_json(experiment_from_json(to_json(e))), to_json(e));
        }
}

TEST(Config, TheRecordKeepsOnlyTheSettingsItsOptimizerUses) {
  ExperimentConfig e;
  e.optimizer.kind = OptimizerKind::SGD;
  nlohmann::json o = to_json(e).at("optimizer");
  EXPECT_FALSE(o.contains("momentum")) << o;
  EXPECT_FALSE(o.contains("betas")) << o;
  EXPECT_FALSE(o.contains("eps")) << o;
  EXPECT_EQ(o.at("weight_decay"), 0.0);
  e.optimizer.kind = OptimizerKind::Momentum;
  e.optimizer.momentum = 0.8;
  o = to_json(e).at("optimizer");
  EXPECT_EQ(o.at("momentum"), 0.8);
  EXPECT_FALSE(o.contains("betas")) << o;
  EXPECT_EQ(experiment_from_json(to_json(e)).optimizer.momentum, 0.8);
  e.optimizer.kind = OptimizerKind::Adam;
  o = to_json(e).at("optimizer");
  EXPECT_FALSE(o.contains("momentum")) << o;
  EXPECT_EQ(o.at("betas").size(), 2u);
  EXPECT_TRUE(o.contains("eps"));
}

TEST(Config, ARecordOfTheEarlierLayoutWithEveryOptimizerSettingReadsBack) {
  nlohmann::json j = to_json(ExperimentConfig{});
  j["optimizer"] = {{"type", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}, {"weight_decay", 0.0},
                    {"betas", {0.9, 0.999}}, {"eps", 1e-8}};
  const ExperimentConfig back = experiment_from_json(j);
  EXPECT_EQ(back.optimizer.kind, OptimizerKind::SGD);
  EXPECT_EQ(back.optimizer.lr, 0.05);
  EXPECT_FALSE(to_json(back).at("optimizer").contains("momentum"));
}

TEST(Config, JsonWithAMissingOrBadFieldIsRejected) {
  nlohmann::json j = to_json(ExperimentConfig{});
  j.erase("steps");
  EXPECT_THROW(experiment_from_json(j), std::invalid_argument);
  j = to_json(ExperimentConfig{});
  j["phase"] = "training";
  EXPECT_THROW(experiment_from_json(j), std::invalid_argument);
  j = to_json(ExperimentConfig{});
  j["optimizer"]["betas"] = {0.9};
  EXPECT_THROW(experiment_from_json(j), std::invalid_argument);
}

TEST(Config, DeviceStrings) {
  for (const char* good : {"cpu", "cuda", "cuda:0", "cuda:7", "cuda:12", "auto"})
    EXPECT_EQ(check_device_string(good), "");
  for (const char* bad :
       {"", "gpu", "CUDA", "cuda:", "cuda:-1", "cuda:x", "cuda:1:2", "cpu:0", "mps", "Auto"}) {
    EXPECT_TRUE(mentions(check_device_string(bad), {"use cpu, cuda, cuda:N", "or auto"})) << bad;
  }
  // The device plainly meant is offered, as other tools write it; none where none is plain.
  const std::string use = "use cpu, cuda, cuda:N with N a GPU index such as 0, or auto";
  EXPECT_EQ(device_fix("gpu"), "did you mean cuda? " + use);
  EXPECT_EQ(device_fix("GPU:1"), "did you mean cuda:1? " + use);
  EXPECT_EQ(device_fix("cuda0"), "did you mean cuda:0? " + use);
  EXPECT_EQ(device_fix("gpu12"), "did you mean cuda:12? " + use);
  EXPECT_EQ(device_fix("CPU"), "did you mean cpu? " + use);
  EXPECT_EQ(device_fix("Auto"), "did you mean auto? " + use);
  for (const char* none : {"", "mps", "tpu", "cuda:", "cuda:-1", "cuda:x", "cpu:0", "gpu:", "cuda:12345"})
    EXPECT_EQ(device_fix(none), use) << none;
  EXPECT_EQ(check_device_string("gpu0"), "device gpu0 is not recognised; did you mean cuda:0? " + use);
}

TEST(Config, AValueMeantIsOffered) {
  using batchscope::yaml_fields::meant_value;
  const std::vector<std::string> phases = {"train", "infer"};
  EXPECT_EQ(meant_value("trian", phases), "train");
  EXPECT_EQ(meant_value("Training", phases), "train");
  EXPECT_EQ(meant_value("inference", phases), "infer");
  EXPECT_EQ(meant_value("eval", phases), "infer");
  EXPECT_EQ(meant_value("backward", phases), "");
  const std::vector<std::string> precisions = {"fp32", "fp16", "bf16"};
  EXPECT_EQ(meant_value("bfloat16", precisions), "bf16");
  EXPECT_EQ(meant_value("half", precisions), "fp16");
  EXPECT_EQ(meant_value("FP16", precisions), "fp16");
  EXPECT_EQ(meant_value("bf61", precisions), "");  // short values: one edit at most
  EXPECT_EQ(meant_value("fp8", precisions), "");   // two edits from fp32 and fp16, and a format of its own
  EXPECT_EQ(meant_value("fp64", precisions), "");
  // An alias is offered only where its value is accepted.
  EXPECT_EQ(meant_value("yes", {"auto", "on", "off"}), "on");
  EXPECT_EQ(meant_value("yes", {"train", "infer"}), "");
}

// Every bad input names the file, the line and what is wrong.

TEST(ConfigErrors, MissingFile) {
  try {
    load_sweep_config("/no/such/dir/exp.yaml");
    FAIL() << "accepted a missing file";
  } catch (const UserError& e) {
    EXPECT_TRUE(mentions(e.what(), {"/no/such/dir/exp.yaml: cannot read the file", "check the path"}));
  }
  try {
    load_sweep_config(std::filesystem::temp_directory_path().string());
    FAIL() << "accepted a directory";
  } catch (const UserError& e) {
    EXPECT_TRUE(mentions(e.what(), {"is a directory"}));
  }
}

TEST(ConfigErrors, MalformedYaml) {
  EXPECT_TRUE(mentions(error_of("experiments:\n  - model: vgg16\n    batch: [1, 2\n  - model: x\n"),
                       {"exp.yaml:", "the YAML is malformed", "fix the syntax"}));
  EXPECT_TRUE(mentions(error_of("model: vgg16\n  batch: 1\n"), {"exp.yaml:2: the YAML is malformed"}));
  // An error found at the end of the text points at the last line, not past it.
  EXPECT_TRUE(mentions(error_of("experiments:\n  - model: vgg16\n    batch: [1, 2\n"),
                       {"exp.yaml:3: the YAML is malformed"}));
  EXPECT_TRUE(mentions(error_of("experiments:\n  - model: vgg16\n    batch: [1, 2\n\n\n"),
                       {"exp.yaml:3: the YAML is malformed"}));
  EXPECT_TRUE(mentions(error_of("model: \"vgg16"), {"exp.yaml:1: the YAML is malformed"}));
}

TEST(ConfigErrors, TopLevelNotAMap) {
  EXPECT_TRUE(
      mentions(error_of("- model: vgg16\n"), {"exp.yaml:1: the top level is a list but must be a map"}));
  EXPECT_TRUE(mentions(error_of("vgg16\n"), {"exp.yaml:1: the top level is vgg16"}));
}

TEST(ConfigErrors, NoExperiments) {
  EXPECT_TRUE(mentions(error_of(""), {"exp.yaml: the file has no experiments", "add experiments:"}));
  EXPECT_TRUE(mentions(error_of("# nothing yet\n"), {"exp.yaml: the file has no experiments"}));
  EXPECT_TRUE(mentions(error_of("device: cpu\nexperiments: []\n"), {"exp.yaml:2: experiments is empty"}));
  EXPECT_TRUE(mentions(error_of("experiments:\n"), {"exp.yaml:1: experiments is empty"}));
  EXPECT_TRUE(mentions(error_of("defaults:\n  steps: 3\n"), {"exp.yaml:1: the file has no experiments"}));
  EXPECT_TRUE(
      mentions(error_of("experiments: vgg16\n"), {"exp.yaml:1: experiments is vgg16 but must be a list"}));
  EXPECT_TRUE(mentions(error_of("experiments:\n  - vgg16\n"),
                       {"exp.yaml:2: an experiment is vgg16 but must be a map"}));
}

TEST(ConfigErrors, UnknownKeysAtEveryLevel) {
  EXPECT_TRUE(mentions(error_of("experimnts:\n  - {model: vgg16, batch: 1}\n"),
                       {"exp.yaml:1: unknown key experimnts in the top level", "did you mean experiments"}));
  EXPECT_TRUE(mentions(error_of("experiments:\n  - model: vgg16\n    batch: 1\n    stpes: 3\n"),
                       {"exp.yaml:4: unknown key stpes in an experiment", "did you mean steps",
                        "accepted keys: name, model, input"}));
  EXPECT_TRUE(mentions(error_of("experiments:\n  - model: vgg16\n    batch_size: 8\n"),
                       {"exp.yaml:3: unknown key batch_size", "did you mean batch "}));
  EXPECT_TRUE(mentions(error_of("defaults:\n  warmpu: 1\nexperiments:\n  - {model: vgg16, batch: 1}\n"),
                       {"exp.yaml:2: unknown key warmpu in defaults", "did you mean warmup"}));
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1\noptimizer:\n  type: sgd\n  learning_rate: 0.1\n"),
                       {"exp.yaml:5: unknown key learning_rate in optimizer", "did you mean lr",
                        "type, lr, momentum, weight_decay, betas, eps"}));
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: {from: 1, to: 8, stpe: 2}\n"),
                       {"exp.yaml:2: unknown key stpe in batch", "did you mean step"}));
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatchsize: 8\n"),
                       {"exp.yaml:2: unknown key batchsize", "did you mean batch "}));
  // An alias whose name is not accepted here is no suggestion: out is an option, not a key.
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1\noutput: runs/x\n"),
                       {"exp.yaml:3: unknown key output", "use one of the accepted keys: "}));
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1\nflux_capacitor: 3\n"),
                       {"exp.yaml:3: unknown key flux_capacitor", "use one of the accepted keys: "}));
}

TEST(ConfigErrors, RepeatedKey) {
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1\nsteps: 3\nsteps: 4\n"),
                       {"exp.yaml:4: steps appears twice in the top level (first at line 3)"}));
}

TEST(ConfigErrors, KeysInTheWrongPlace) {
  EXPECT_TRUE(mentions(
      error_of("steps: 3\nexperiments:\n  - {model: vgg16, batch: 1}\n"),
      {"exp.yaml:1: steps cannot sit at the top level beside experiments", "move it under defaults:"}));
  EXPECT_TRUE(mentions(error_of("defaults:\n  name: x\nexperiments:\n  - {model: vgg16, batch: 1}\n"),
                       {"exp.yaml:2: name cannot be a default"}));
  EXPECT_TRUE(mentions(error_of("device: cpu\ndefaults:\n  device: cuda\nmodel: vgg16\nbatch: 1\n"),
                       {"exp.yaml:1: device is given both here and under defaults:"}));
  EXPECT_TRUE(mentions(error_of("defaults: [1]\nmodel: vgg16\nbatch: 1\n"),
                       {"exp.yaml:1: defaults is a list but must be a map"}));
}

TEST(ConfigErrors, WrongTypes) {
  const std::string head = "model: vgg16\nbatch: 1\n";
  EXPECT_TRUE(
      mentions(error_of(head + "steps: abc\n"), {"exp.yaml:3: steps is abc but must be a whole number"}));
  EXPECT_TRUE(
      mentions(error_of(head + "steps: \"abc\"\n"), {"exp.yaml:3: steps is abc but must be a whole number"}));
  EXPECT_TRUE(
      mentions(error_of(head + "steps: 2.5\n"), {"exp.yaml:3: steps is 2.5 but must be a whole number"}));
  EXPECT_TRUE(mentions(error_of(head + "warmup: [1]\n"),
                       {"exp.yaml:3: warmup is a list but must be a whole number"}));
  EXPECT_TRUE(
      mentions(error_of(head + "warmup:\n"), {"exp.yaml:3: warmup is empty but must be a whole number"}));
  EXPECT_TRUE(mentions(error_of(head + "channels_last: maybe\n"),
                       {"exp.yaml:3: channels_last is maybe but must be true or false"}));
  EXPECT_TRUE(mentions(error_of(head + "cudnn_benchmark: 2\n"), {"exp.yaml:3: cudnn_benchmark is 2"}));
  EXPECT_TRUE(
      mentions(error_of(head + "classes: ten\n"), {"exp.yaml:3: classes is ten but must be a whole number"}));
  EXPECT_TRUE(
      mentions(error_of(head + "seed: -1\n"), {"exp.yaml:3: seed is -1 but must be a whole number of 0"}));
  EXPECT_TRUE(mentions(error_of(head + "input: 224\n"), {"exp.yaml:3: input is 224 but must be a list"}));
  EXPECT_TRUE(
      mentions(error_of(head + "phase: [train]\n"), {"exp.yaml:3: phase is a list but must be a word"}));
  EXPECT_TRUE(mentions(error_of("model: {name: vgg16}\nbatch: 1\n"),
                       {"exp.yaml:1: model is a map but must be a word"}));
  EXPECT_TRUE(
      mentions(error_of(head + "optimizer: {lr: fast}\n"), {"exp.yaml:3: lr is fast but must be a number"}));
  EXPECT_TRUE(mentions(error_of(head + "name: [a]\n"), {"exp.yaml:3: name is a list but must be a word"}));
}

TEST(ConfigErrors, MissingModelOrBatch) {
  EXPECT_TRUE(mentions(error_of("experiments:\n  - batch: 1\n"),
                       {"exp.yaml:2: the experiment has no model", "add model: NAME", "vgg16"}));
  EXPECT_TRUE(
      mentions(error_of("experiments:\n  - {model: vgg16, batch: 1}\n  - steps: 3\n    model: vgg16\n"),
               {"exp.yaml:3: the experiment has no batch sizes", "add batch:"}));
}

TEST(ConfigErrors, UnknownModelListsTheKnownOnes) {
  const std::string message =
      error_of("experiments:\n  - {model: vgg16, batch: 1}\n  - {model: vgg16x, batch: 1}\n");
  EXPECT_TRUE(mentions(
      message, {"exp.yaml:3: model vgg16x is not a known model", "did you mean vgg16", "known models: "}));
  for (const auto& spec : models::all_models()) EXPECT_TRUE(mentions(message, {spec.name}));
  EXPECT_TRUE(mentions(error_of("model: transformer_xxl\nbatch: 1\n"),
                       {"exp.yaml:1: model transformer_xxl is not a known model",
                        "use one of the known models: ", ", or the path of a TorchScript file."}));
}

TEST(ConfigErrors, BadDevice) {
  for (const char* device : {"gpu", "cuda:", "cuda:-1", "cuda:x", "CPU"}) {
    EXPECT_TRUE(
        mentions(error_of(std::string("model: vgg16\nbatch: 1\ndevice: \"") + device + "\"\n"),
                 {"exp.yaml:3: device " + std::string(device) + " is not recognised", "cpu, cuda, cuda:N"}))
        << device;
  }
  EXPECT_TRUE(mentions(error_of("device: tpu\nexperiments:\n  - {model: vgg16, batch: 1}\n"),
                       {"exp.yaml:1: device tpu is not recognised"}));
  EXPECT_TRUE(mentions(error_of("defaults:\n  device: gpu0\nexperiments:\n  - {model: vgg16, batch: 1}\n"),
                       {"exp.yaml:2: device gpu0 is not recognised"}));
}

TEST(ConfigErrors, BadBatch) {
  const auto batch_error = [](const std::string& batch) {
    return error_of("model: vgg16\nbatch: " + batch + "\n");
  };
  EXPECT_EQ(batch_error("70:1"),
            "exp.yaml:2: batch 70:1 is an inverted range; give FROM:TO with FROM <= TO.");
  EXPECT_TRUE(mentions(batch_error("\"\""), {"exp.yaml:2: batch \"\" is an empty batch spec", "1:64:8"}));
  EXPECT_TRUE(mentions(batch_error(""), {"exp.yaml:2: batch is empty", "write batch as"}));
  EXPECT_TRUE(mentions(batch_error("[]"), {"exp.yaml:2: batch is an empty list"}));
  EXPECT_TRUE(mentions(batch_error("0"), {"exp.yaml:2: batch 0 is not a batch size", "1 or more"}));
  EXPECT_TRUE(mentions(batch_error("1:64:0"), {"exp.yaml:2: batch 1:64:0 has step 0"}));
  EXPECT_TRUE(mentions(batch_error("lots"), {"exp.yaml:2: batch lots is not a batch spec"}));
  EXPECT_TRUE(mentions(batch_error("1,8,8"), {"exp.yaml:2: batch 1,8,8 lists 8 twice"}));
  EXPECT_TRUE(mentions(batch_error("{from: 70, to: 1}"), {"exp.yaml:2: batch from 70 to 1 is inverted"}));
  EXPECT_TRUE(mentions(batch_error("{from: 1}"), {"exp.yaml:2: batch has no to"}));
  EXPECT_TRUE(mentions(batch_error("{from: 1, to: 8, step: 0}"), {"exp.yaml:2: step 0 is too small"}));
  EXPECT_TRUE(mentions(batch_error("{from: 0, to: 8}"), {"exp.yaml:2: from 0 is too small"}));
  EXPECT_TRUE(mentions(batch_error("\n  - 4\n  - 0\n"), {"exp.yaml:4: batch size 0 is too small"}));
  EXPECT_TRUE(mentions(batch_error("\n  - 4\n  - 8\n  - 4\n"), {"exp.yaml:5: batch size 4 is listed twice"}));
  EXPECT_TRUE(mentions(batch_error("[1, x]"), {"exp.yaml:2: batch size is x but must be a whole number"}));
  EXPECT_TRUE(mentions(batch_error("\"1:64:x1\""), {"exp.yaml:2: batch 1:64:x1 grows by 1", "above 1"}));
  EXPECT_TRUE(mentions(batch_error("\"1:max:x0.5\""), {"grows by 0.5"}));
  EXPECT_TRUE(mentions(batch_error("{from: 1, to: 8, step: 2, factor: 2}"),
                       {"exp.yaml:2: batch has both step and factor"}));
  EXPECT_TRUE(mentions(batch_error("{from: 1, to: 8, factor: 1}"), {"factor 1 is too small"}));
}

TEST(ConfigErrors, DataTransferAndChunk) {
  EXPECT_TRUE(mentions(error_of("model: mnist_cnn\nbatch: 1:4\ndata: mnist\ninput: [3, 32, 32]\n"),
                       {"exp.yaml:4: input is not 1x28x28", "leave input out"}));
  EXPECT_TRUE(mentions(error_of("model: mnist_cnn\nbatch: 1:4\ndata: mnist\nclasses: 100\n"),
                       {"exp.yaml:4: classes is not 10"}));
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1:4\ndata: cifar10\ninput: [3, 224, 224]\n"),
                       {"exp.yaml:4: input is not 3x32x32, the shape of CIFAR-10 images",
                        "give [3, 32, 32]) for data: cifar10"}));
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1:4\ndata: cifar100\nclasses: 10\n"),
                       {"exp.yaml:4: classes is not 100, the classes of CIFAR-100", "give 100"}));
  EXPECT_TRUE(mentions(error_of("model: lstm_lm\nbatch: 1:4\ndata: cifar10\n"),
                       {"exp.yaml:3: lstm_lm takes token sequences, not the images of cifar10"}));
  EXPECT_TRUE(mentions(error_of("model: mnist_cnn\nbatch: 1:4\ntransfer: sometimes\n"),
                       {"exp.yaml:3: transfer sometimes is not recognised", "excluded or included"}));
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1:4\ntf32: maybe\n"),
                       {"exp.yaml:3: tf32 maybe is not recognised", "default, on or off"}));
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1:4\noptimizer: {foreach: yes}\n"),
                       {"exp.yaml:3: foreach yes is not recognised", "auto, on or off"}));
  SweepOverrides bad_foreach;
  bad_foreach.foreach = "always";
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1:4\n", bad_foreach),
                       {"--foreach always is not recognised", "auto, on or off"}));
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1:4\nloss_scale: static\n"),
                       {"exp.yaml:3: loss_scale static is not recognised", "auto, dynamic or off"}));
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1:4\nphase: infer\nloss_scale: dynamic\n"),
                       {"exp.yaml:4: loss_scale applies to phase: train only", "use phase: train"}));
  // The scaler's settings: each in its range, none beside an off given with it, no unknown key.
  const std::string fp16 = "model: vgg16\nbatch: 1:4\nprecision: fp16\n";
  EXPECT_TRUE(mentions(
      error_of(fp16 + "loss_scale: {type: off, init_scale: 1024}\n"),
      {"exp.yaml:4: init_scale applies to dynamic loss scaling, which type off turns off", "remove it"}));
  EXPECT_TRUE(mentions(error_of(fp16 + "loss_scale: {init_scale: 0}\n"),
                       {"exp.yaml:4: init_scale 0 is too small", "above 0, such as 65536"}));
  EXPECT_TRUE(mentions(error_of(fp16 + "loss_scale: {init_scale: big}\n"),
                       {"exp.yaml:4: init_scale is big but must be a number"}));
  EXPECT_TRUE(mentions(error_of(fp16 + "loss_scale: {init_scale: 1e39}\n"),
                       {"exp.yaml:4: init_scale 1e39 is too large"}));
  EXPECT_TRUE(mentions(error_of(fp16 + "loss_scale: {growth_factor: 1}\n"),
                       {"exp.yaml:4: growth_factor 1 is too small", "above 1, such as 2"}));
  EXPECT_TRUE(mentions(error_of(fp16 + "loss_scale: {backoff_factor: 1}\n"),
                       {"exp.yaml:4: backoff_factor 1 is too large", "below 1, such as 0.5"}));
  EXPECT_TRUE(mentions(error_of(fp16 + "loss_scale:\n  backoff_factor: 0\n"),
                       {"exp.yaml:5: backoff_factor 0 is too small"}));
  EXPECT_TRUE(mentions(error_of(fp16 + "loss_scale: {growth_interval: 0}\n"),
                       {"exp.yaml:4: growth_interval 0 is too small", "1 to 2147483647 steps"}));
  EXPECT_TRUE(mentions(error_of(fp16 + "loss_scale: {growth_interval: 2147483648}\n"),
                       {"exp.yaml:4: growth_interval 2147483648 is too large"}));
  EXPECT_TRUE(mentions(error_of(fp16 + "loss_scale: {init: 1024}\n"), {"exp.yaml:4:", "init_scale"}));
  SweepOverrides off_with_init;
  off_with_init.loss_scale = "off";
  off_with_init.loss_scale_init = "1024";
  EXPECT_TRUE(
      mentions(error_of(fp16, off_with_init),
               {"--loss-scale-init applies to dynamic loss scaling, which --loss-scale off turns off"}));
  SweepOverrides bad_init;
  bad_init.loss_scale_init = "-2";
  EXPECT_TRUE(mentions(error_of(fp16, bad_init), {"--loss-scale-init -2 is too small"}));
  SweepOverrides bad_interval;
  bad_interval.loss_scale_growth_interval = "1.5";
  EXPECT_TRUE(mentions(error_of(fp16, bad_interval),
                       {"--loss-scale-growth-interval is 1.5 but must be a whole number"}));
  SweepOverrides scaled_inference;  // named as the option that gave it
  scaled_inference.loss_scale = "dynamic";
  EXPECT_TRUE(mentions(error_of("model: vgg16\nbatch: 1:4\nphase: infer\n", scaled_inference),
                       {"--loss-scale applies to phase: train only", "remove it"}));
  EXPECT_EQ(only_experiment("model: mnist_cnn\nbatch: 1:4\nchunk: 100\n").chunk, 100);  // train: accumulation
  EXPECT_TRUE(mentions(error_of("model: mnist_cnn\nbatch: 1:max\nchunk: 100\n"),
                       {"exp.yaml:3: chunk runs every batch in slices of 100 samples", "1:4096:x2"}));
  EXPECT_TRUE(mentions(error_of("model: mnist_cnn\nbatch: 1:4\nphase: infer\nchunk: 0\n"), {"exp.yaml:4:"}));
  // chunk: auto: every batch whole where it fits; its record says auto and reads back as it.
  const ExperimentConfig automatic = only_experiment("model: mnist_cnn\nbatch: 1:4\nchunk: auto\n");
  EXPECT_TRUE(automatic.chunk_auto);
  EXPECT_EQ(automatic.chunk, 0);
  EXPECT_EQ(to_json(automatic).at("chunk"), "auto");
  EXPECT_TRUE(experiment_from_json(to_json(automatic)).chunk_auto);
  EXPECT_FALSE(experiment_from_json(to_json(only_experiment("model: mnist_cnn\nbatch: 1:4\n"))).chunk_auto);
  SweepOverrides from_command_line;
  from_command_line.chunk_auto = true;
  EXPECT_TRUE(only_experiment("model: mnist_cnn\nbatch: 1:4\nchunk: 64\n", from_command_line).chunk_auto);
  EXPECT_TRUE(mentions(error_of("model: mnist_cnn\nbatch: 1:max\nchunk: auto\n"),
                       {"exp.yaml:3: chunk auto runs the batch sizes that do not fit whole in micro-batches",
                        "leave out chunk: auto"}));
  EXPECT_TRUE(mentions(error_of("model: mnist_cnn\nbatch: 1:4\nchunk: many\n"),
                       {"exp.yaml:3:", "or auto for micro-batches only where a batch does not fit whole"}));
}

TEST(ConfigErrors, StepCounts) {
  const std::string head = "model: vgg16\nbatch: 1\n";
  EXPECT_EQ(error_of(head + "steps: 0\n"),
            "exp.yaml:3: steps 0 is too small; give 1 to 1000000 timed steps per batch size, or auto.");
  EXPECT_EQ(error_of(head + "warmup: -1\n"),
            "exp.yaml:3: warmup -1 is too small; give 0 to 1000000 warm-up steps.");
  EXPECT_TRUE(
      mentions(error_of(head + "steps: 99999999999\n"), {"exp.yaml:3: steps 99999999999 is too large"}));
}

TEST(Config, StepsAutoWithItsSettings) {
  const std::string head = "model: mnist_cnn\nbatch: 1\n";
  ExperimentConfig e = only_experiment(head + "steps: auto\n");
  ASSERT_TRUE(e.auto_steps);
  EXPECT_DOUBLE_EQ(e.auto_steps->ci_width, 0.01);
  EXPECT_DOUBLE_EQ(e.auto_steps->min_time_s, 0);
  EXPECT_DOUBLE_EQ(e.auto_steps->max_time_s, 10);
  EXPECT_EQ(e.timed_steps, limits::kAutoFirstSteps);
  e = only_experiment(head + "steps: auto\nci_width: 2.5%\nmin_time: 1\nmax_time: 30\n");
  EXPECT_DOUBLE_EQ(e.auto_steps->ci_width, 0.025);
  EXPECT_DOUBLE_EQ(e.auto_steps->min_time_s, 1);
  EXPECT_DOUBLE_EQ(e.auto_steps->max_time_s, 30);
  EXPECT_DOUBLE_EQ(only_experiment(head + "steps: auto\nci_width: 3\n").auto_steps->ci_width, 0.03);
  EXPECT_FALSE(only_experiment(head + "steps: 7\n").auto_steps);

  // The run record keeps it, and reads it back.
  const ExperimentConfig back = experiment_from_json(to_json(e));
  ASSERT_TRUE(back.auto_steps);
  EXPECT_DOUBLE_EQ(back.auto_steps->ci_width, 0.025);
  EXPECT_DOUBLE_EQ(back.auto_steps->max_time_s, 30);
  EXPECT_EQ(back.timed_steps, e.timed_steps);
  EXPECT_EQ(to_json(e)["steps"], "auto");
  EXPECT_EQ(to_json(only_experiment(head))["steps"], 20);
  EXPECT_FALSE(to_json(only_experiment(head)).contains("auto_steps"));
}

TEST(Config, AnAutoSettingOnTheCommandLineAsksForAutoSteps) {
  const std::string file = "model: mnist_cnn\nbatch: 1\nsteps: 30\n";
  SweepOverrides o;
  o.min_time = "2";
  ExperimentConfig e = only_experiment(file, o);
  ASSERT_TRUE(e.auto_steps);
  EXPECT_DOUBLE_EQ(e.auto_steps->min_time_s, 2);
  o = {};
  o.ci_width = "5%";
  EXPECT_DOUBLE_EQ(only_experiment(file, o).auto_steps->ci_width, 0.05);
  // A count on the command line wins over the file's auto, and then an auto setting is refused.
  o = {};
  o.timed_steps = 12;
  EXPECT_FALSE(only_experiment("model: mnist_cnn\nbatch: 1\nsteps: auto\n", o).auto_steps);
  o.max_time = "5";
  EXPECT_EQ(error_of(file, o), "command line: --max-time applies to steps: auto only; remove it, or set steps: auto.");
  o = {};
  o.steps_auto = true;
  EXPECT_TRUE(only_experiment(file, o).auto_steps);
}

TEST(ConfigErrors, AutoStepSettings) {
  const std::string head = "model: mnist_cnn\nbatch: 1\n";
  EXPECT_EQ(error_of(head + "ci_width: 1%\n"),
            "exp.yaml:3: ci_width applies to steps: auto only; remove it, or set steps: auto.");
  EXPECT_TRUE(mentions(error_of(head + "steps: 5\nmax_time: 3\n"), {"exp.yaml:4: max_time applies to steps: auto only"}));
  EXPECT_TRUE(mentions(error_of(head + "steps: auto\nci_width: 0%\n"), {"exp.yaml:4: ci_width 0 is too small", "in percent"}));
  EXPECT_TRUE(mentions(error_of(head + "steps: auto\nci_width: wide\n"), {"exp.yaml:4: ci_width", "must be a number"}));
  EXPECT_TRUE(mentions(error_of(head + "steps: auto\nmax_time: 0\n"), {"exp.yaml:4: max_time 0 is too small"}));
  EXPECT_EQ(error_of(head + "steps: auto\nmin_time: 20\n"),
            "exp.yaml:4: min_time 20 s is longer than max_time 10 s; give a min_time no longer than max_time, or raise "
            "max_time.");
  EXPECT_TRUE(mentions(error_of(head + "steps: sometimes\n"), {"exp.yaml:3: steps", "must be a whole number", "or auto"}));
}

TEST(ConfigErrors, UnknownWords) {
  const std::string head = "model: vgg16\nbatch: 1\n";
  EXPECT_EQ(error_of(head + "phase: training\n"),
            "exp.yaml:3: phase training is not recognised; did you mean train? use train or infer.");
  EXPECT_EQ(error_of(head + "precision: fp64\n"),
            "exp.yaml:3: precision fp64 is not recognised; use fp32, fp16 or bf16.");
  EXPECT_EQ(error_of(head + "order: random\n"),
            "exp.yaml:3: order random is not recognised; did you mean shuffled? use ascending or shuffled.");
  EXPECT_EQ(error_of(head + "optimizer: adagrad\n"),
            "exp.yaml:3: optimizer adagrad is not recognised; use sgd, momentum, adam or adamw.");
  EXPECT_TRUE(mentions(error_of(head + "optimizer:\n  type: rmsprop\n"),
                       {"exp.yaml:4: type rmsprop is not recognised"}));
  EXPECT_TRUE(
      mentions(error_of(head + "data: imagenet\n"),
               {"exp.yaml:3: data imagenet is not synthetic, a dataset (mnist, fashion-mnist, cifar10 or "
                "cifar100) or a directory",
                "scripts/get_datasets.sh"}));
  // A mistyped dataset name is answered with the one it was meant for.
  EXPECT_TRUE(mentions(error_of(head + "data: CIFAR-10\n"),
                       {"exp.yaml:3: data CIFAR-10 is not synthetic",
                        "did you mean cifar10? scripts/get_datasets.sh cifar10"}));
  // And generated inputs, mistyped or as other tools name them, with synthetic.
  for (const char* generated : {"synthtic", "Synthetic", "random", "fake"})
    EXPECT_TRUE(mentions(error_of(head + "data: " + generated + "\n"),
                         {"is not synthetic", "did you mean synthetic? it times steps on generated inputs"}))
        << generated;
}

TEST(ConfigErrors, OptimizerValues) {
  const std::string head = "model: vgg16\nbatch: 1\noptimizer:\n";
  EXPECT_TRUE(mentions(error_of(head + "  lr: 0\n"), {"exp.yaml:4: lr 0 is too small", "above 0"}));
  EXPECT_TRUE(mentions(error_of(head + "  type: momentum\n  momentum: 1.5\n"),
                       {"exp.yaml:5: momentum 1.5 is too large"}));
  EXPECT_TRUE(mentions(error_of(head + "  type: sgd\n  momentum: 0.9\n"),
                       {"exp.yaml:5: momentum does not apply to optimizer sgd", "set type: momentum"}));
  EXPECT_TRUE(mentions(error_of(head + "  momentum: 0.9\n"), {"exp.yaml:4: momentum does not apply"}));
  EXPECT_TRUE(mentions(error_of(head + "  type: adam\n  betas: [0.9]\n"),
                       {"exp.yaml:5: betas must hold two numbers, not 1"}));
  EXPECT_TRUE(mentions(error_of(head + "  type: adam\n  betas:\n    - 0.9\n    - 1.0\n"),
                       {"exp.yaml:7: beta2 1.0 is too large"}));
  EXPECT_TRUE(
      mentions(error_of(head + "  weight_decay: -0.1\n"), {"exp.yaml:4: weight_decay -0.1 is too small"}));
}

TEST(ConfigErrors, BadInputShapeAndClasses) {
  const std::string head = "model: vgg16\nbatch: 1\n";
  EXPECT_TRUE(mentions(error_of(head + "input: [3, 0, 224]\n"), {"exp.yaml:3: input size 0 is too small"}));
  EXPECT_TRUE(mentions(error_of(head + "input:\n  - 3\n  - -2\n  - 4\n"),
                       {"exp.yaml:5: input size -2 is too small"}));
  EXPECT_TRUE(mentions(error_of(head + "input: [3, 224]\n"),
                       {"exp.yaml:3: input has 2 sizes for vgg16", "without the batch dimension"}));
  EXPECT_TRUE(mentions(error_of(head + "input: []\n"), {"exp.yaml:3: input has 0 sizes"}));
  EXPECT_EQ(error_of(head + "classes: 0\n"), "exp.yaml:3: classes 0 is too small; give 1 to 16777216 classes.");
}

TEST(ConfigErrors, DuplicateNames) {
  EXPECT_TRUE(mentions(error_of("experiments:\n  - {name: a, model: vgg16, batch: 1}\n"
                                "  - {model: vgg16, batch: 2, name: a}\n"),
                       {"exp.yaml:3: experiment name a is already used by the experiment at line 2",
                        "give each experiment a distinct name (the name key)."}));
  EXPECT_TRUE(
      mentions(error_of("experiments:\n  - {model: vgg16, batch: 1}\n  - {model: vgg16, batch: 2}\n"),
               {"exp.yaml:3: experiment name vgg16_train_fp32 is already used by the experiment at line 2"}));
  EXPECT_TRUE(
      mentions(error_of("model: vgg16\nbatch: 1\nname: a/b\n"), {"exp.yaml:3: name a/b is not usable"}));
}

TEST(ConfigErrors, OverrideValuesNameTheCommandLine) {
  const std::string file = "model: vgg16\nbatch: 1\n";
  SweepOverrides o;
  o.batch = "70:1";
  EXPECT_EQ(error_of(file, o),
            "command line: --batch 70:1 is an inverted range; give FROM:TO with FROM <= TO.");
  o = {};
  o.device = "gpu";
  EXPECT_TRUE(
      mentions(error_of(file, o), {"command line: --device gpu is not recognised; did you mean cuda?"}));
  o = {};
  o.model = "vgg61";
  EXPECT_TRUE(mentions(error_of(file, o), {"command line: --model vgg61 is not a known model"}));
  o = {};
  o.timed_steps = 0;
  EXPECT_TRUE(mentions(error_of(file, o), {"command line: --steps 0 is too small"}));
  o = {};
  o.warmup_steps = -3;
  EXPECT_TRUE(mentions(error_of(file, o), {"command line: --warmup -3 is too small"}));
  o = {};
  o.phase = "eval";
  EXPECT_TRUE(
      mentions(error_of(file, o), {"command line: --phase eval is not recognised; did you mean infer?"}));
  o = {};
  o.precision = "int8";
  EXPECT_TRUE(mentions(error_of(file, o), {"command line: --precision int8 is not recognised; use fp32"}));
  o = {};
  o.optimizer = "adagrad";
  EXPECT_TRUE(mentions(error_of(file, o), {"command line: --optimizer adagrad is not recognised"}));
  o = {};
  o.order = "random";
  EXPECT_TRUE(mentions(error_of(file, o), {"command line: --order random is not recognised"}));
  o = {};
  o.data = "imagenet";
  EXPECT_TRUE(mentions(error_of(file, o), {"command line: --data imagenet is not synthetic, a dataset"}));
  o = {};
  o.lr = -1;
  EXPECT_TRUE(mentions(error_of(file, o), {"command line: --lr -1 is too small"}));
  o = {};
  o.input_shape = Sizes{3, 0, 8};
  EXPECT_TRUE(mentions(error_of(file, o), {"command line: --input size 0 is too small"}));
  o = {};
  o.classes = 0;
  EXPECT_TRUE(mentions(error_of(file, o), {"command line: --classes 0 is too small"}));
}

TEST(ConfigErrors, CommandLineAloneNeedsModelAndBatch) {
  EXPECT_TRUE(mentions(error_of_overrides({}),
                       {"command line: no model given", "pass --model NAME", "or a config file"}));
  SweepOverrides o;
  o.model = "vgg16";
  EXPECT_TRUE(mentions(error_of_overrides(o), {"command line: no batch sizes given", "pass --batch"}));
  o.batch = "8:1";
  EXPECT_EQ(error_of_overrides(o),
            "command line: --batch 8:1 is an inverted range; give FROM:TO with FROM <= TO.");
}

TEST(Words, TheNearestWordIsFoundWithinTheDistanceGiven) {
  EXPECT_EQ(edit_distance("modle", "model"), 2u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("epoch", "epochs"), 1u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
  const std::vector<std::string> options{"model", "batch", "epochs", "out"};
  EXPECT_EQ(nearest_word("modle", options, 3), "model");
  EXPECT_EQ(nearest_word("modle", options, 2), "");  // 2 is not below 2
  EXPECT_EQ(nearest_word("outt", options, 3), "out");
  EXPECT_EQ(nearest_word("zzzzzz", options, 3), "");
  EXPECT_EQ(nearest_word("bat", {"bar", "bat_"}, 3), "bar");  // the first of the equally near
}

TEST(Words, TheWordMeantIsItselfInAnyCaseAnAliasOrTheNearest) {
  const std::vector<std::string> commands{"sweep", "analyze", "eval", "env"};
  const std::map<std::string, std::string> aliases{{"merge", "analyze"}, {"run", "sweep"}, {"x", "train"}};
  EXPECT_EQ(meant_word("Sweep", commands, aliases), "sweep");
  EXPECT_EQ(meant_word("MERGE", commands, aliases), "analyze");
  EXPECT_EQ(meant_word("analyse", commands, aliases), "analyze");
  EXPECT_EQ(meant_word("swep", commands, aliases), "sweep");    // four letters: one edit
  EXPECT_EQ(meant_word("evl", commands, aliases), "eval");      // eval before env, both one edit off
  EXPECT_EQ(meant_word("swip", commands, aliases), "");         // two edits: too far for four letters
  EXPECT_EQ(meant_word("sweeep", commands, aliases), "sweep");  // one of six letters
  EXPECT_EQ(meant_word("x", commands, aliases), "");            // an alias of a word not accepted
  EXPECT_EQ(meant_word("compare", commands, aliases), "");
}

}  // namespace
}  // namespace batchscope

// A second YAML document is found by lines: yaml-cpp's LoadAll loops forever on some malformed input
// (tests/fuzz/corpus/experiment_file/regression-loadall-loops).
TEST(SecondDocument, IsTheFirstContentAfterADocumentMarker) {
  using batchscope::yaml_fields::second_document_line;
  EXPECT_EQ(second_document_line("model: a\nbatch: 1\n"), std::nullopt);
  EXPECT_EQ(second_document_line("---\nmodel: a\n...\n# done\n\n"), std::nullopt);  // one document, marked
  EXPECT_EQ(second_document_line("model: a\n---\n---\n  # note\nmodel: b\n"), std::optional<int>(5));
  EXPECT_EQ(second_document_line("model: a\n--- {model: b}\n"), std::optional<int>(2));
  EXPECT_EQ(second_document_line("model: a\nname: ---x\n"), std::nullopt);  // no marker at a line's start
}
