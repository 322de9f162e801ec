#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <tuple>

#include "lib/microbatch/microbatch.h"
#include "lib/sweep/sweep_runner.h"
#include "lib/timing/step_runner.h"
#include "models/registry.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;
using namespace batchscope;

namespace {

// Small sequences and vocabularies keep these full-width models quick on a CPU.
ExperimentConfig sequence_experiment(const std::string& model, int64_t seq_len, int64_t classes,
                                     Phase phase) {
  const models::ModelSpec* spec = models::find_model(model);
  EXPECT_NE(spec, nullptr) << model;
  ExperimentConfig e;
  e.name = model + "_" + to_string(phase);
  e.model = model;
  e.input_shape = spec->default_input;
  e.input_shape[static_cast<std::size_t>(spec->sequence_axis)] = seq_len;
  e.classes = classes;
  e.phase = phase;
  e.batch_sizes = {1, 3};
  e.warmup_steps = 1;
  e.timed_steps = 2;
  e.device = "cpu";
  return e;
}

// Each sequence model at a size it accepts: a short sequence (frames for Deep Speech 2) and a small
// vocabulary (its 29 characters for Deep Speech 2).
ExperimentConfig small_sequence_experiment(const std::string& model, Phase phase) {
  if (model == "lstm_lm") return sequence_experiment(model, 5, 50, phase);
  if (model == "transformer") return sequence_experiment(model, 6, 50, phase);
  return sequence_experiment(model, 24, 29, phase);
}

// One case a model and phase, so that the shards of the suite share these, the slowest of its cases.
class EverySequenceModel : public ::testing::TestWithParam<std::tuple<std::string, Phase>> {};

TEST_P(EverySequenceModel, SweepsEveryBatchSize) {
  const auto& [model, phase] = GetParam();
  SweepConfig config{"test", {small_sequence_experiment(model, phase)}};
  SweepOptions options;
  const testing_support::TempDir dir;
  options.out_dir = dir / to_string(phase);
  std::ostringstream progress;
  const SweepOutcome outcome = run_sweep(resolve_for_machine(config), options, progress);
  int points = 0;
  for (const SweepRecord& record : outcome.records) {
    const Json r = to_json(record);
    const std::string type = r.value("type", "");
    EXPECT_NE(type, "oom");
    if (type == "step" && phase == Phase::Train) {
      EXPECT_TRUE(std::isfinite(r.at("loss").get<double>())) << r.dump();
    }
    if (type == "point") {
      ++points;
      EXPECT_GT(r.at("flops_per_step").get<double>(), 0) << r.dump();
      EXPECT_GT(r.at("median_ms").get<double>(), 0);
    }
  }
  EXPECT_EQ(points, 2) << model << " " << to_string(phase);
}

INSTANTIATE_TEST_SUITE_P(TrainAndInfer, EverySequenceModel,
                         ::testing::Combine(::testing::Values("lstm_lm", "transformer", "deepspeech2",
                                                              "deepspeech2_gru"),
                                            ::testing::Values(Phase::Train, Phase::Infer)),
                         [](const ::testing::TestParamInfo<EverySequenceModel::ParamType>& info) {
                           return std::get<0>(info.param) + "_" + to_string(std::get<1>(info.param));
                         });

TEST(SequenceSweep, BatchesAreShapedByTheModelAndSplitAlongTheBatch) {
  ExperimentConfig e = sequence_experiment("transformer", 6, 50, Phase::Infer);
  e.chunk = 2;
  Workload workload(e, torch::Device("cpu"));
  workload.prepare_batch(5);
  workload.step();  // chunks of 2, 2 and 1 along the batch
  EXPECT_DOUBLE_EQ(workload.flops_per_step(5), 5 * workload.flops_per_step(1));
  ExperimentConfig train = sequence_experiment("lstm_lm", 5, 50, Phase::Train);
  Workload lm(train, torch::Device("cpu"));
  lm.prepare_batch(3);
  lm.step();
  // Uniform targets over 50 words: the untrained model's loss is near log(50).
  EXPECT_NEAR(lm.last_loss().item<double>(), std::log(50.0), 1.0);
}

TEST(SequenceMicroBatching, ModelModeAccumulatesExactlyWithoutBatchStatistics) {
  MicroBatchOptions o;
  o.batch = 4;
  o.mode = MicroBatchMode::Model;
  o.policies = {MicroBatchPolicy::All};
  o.warmup = 0;
  o.steps = 1;
  o.repeats = 1;
  ExperimentConfig e = sequence_experiment("lstm_lm", 4, 30, Phase::Train);
  const MicroBatchStudy study = run_microbatch_study(e, o);
  ASSERT_EQ(study.outcomes.size(), 1u);
  EXPECT_FALSE(study.batch_norm);
  // Dropout (the LSTM's own between its layers included) is off for the comparison, so accumulating
  // micro-batches gives the mini-batch's gradients up to rounding.
  EXPECT_LT(study.outcomes[0].gradient_difference, 1e-4);

  Workload workload(e, torch::Device("cpu"));
  const models::Batch batch = models::find_model("lstm_lm")->synthetic_batch(4, e.input_shape, e.classes);
  EXPECT_LT(gradient_relative_difference(workload.network(), batch.inputs, batch.targets, {1, 3}), 1e-4);

  o.mode = MicroBatchMode::Layer;
  try {
    run_microbatch_study(e, o);
    FAIL() << "layer mode ran on a model without convolutions";
  } catch (const UserError& error) {
    // One sentence with its own fix, not a second generic one after it.
    const std::string text = error.what();
    EXPECT_NE(text.find("lstm_lm has none; use --mode model (gradient accumulation)."), std::string::npos)
        << text;
    EXPECT_EQ(text.find("check --batch"), std::string::npos) << text;
  }
}

}  // namespace
