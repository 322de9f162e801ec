#include <gtest/gtest.h>
#include <torch/script.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "data/cifar.h"
#include "data/idx.h"
#include "lib/common/errors.h"
#include "lib/common/micro_batches.h"
#include "lib/common/program_runner.h"
#include "lib/device/cpu_memory.h"
#include "lib/records/records.h"
#include "lib/records/run_store.h"
#include "lib/timing/autocast.h"
#include "lib/training/batch_study.h"
#include "lib/training/determinism.h"
#include "lib/training/device_comparison.h"
#include "lib/training/fitting_chunk.h"
#include "lib/training/training.h"
#include "lib/training/training_parts.h"
#include "tests/fake_power_source.h"
#include "tests/test_support.h"

namespace fs = std::filesystem;

namespace batchscope {
namespace {

TEST(AgreeingSignificantDigits, CountsTheDigitsThatRoundAlike) {
  EXPECT_EQ(agreeing_significant_digits(0.123456, 0.123499), 4);  // 0.1235 both; 0.12346 vs 0.12350
  EXPECT_EQ(agreeing_significant_digits(0.1499, 0.1501), 3);      // 0.150 both, though 0.1 vs 0.2
  EXPECT_EQ(agreeing_significant_digits(9.9999, 10.001), 4);      // 10.00 both, across a decade
  EXPECT_EQ(agreeing_significant_digits(1.0, 2.0), 0);
  EXPECT_EQ(agreeing_significant_digits(1.0, -1.0), 0);
  EXPECT_EQ(agreeing_significant_digits(0.0, 1e-300), 0);
  EXPECT_EQ(agreeing_significant_digits(123456.0, 123457.0), 5);
  EXPECT_EQ(agreeing_significant_digits(-0.5, -0.5000001), 6);
  EXPECT_EQ(agreeing_significant_digits(NAN, 1.0), 0);
}

// The pass before the first epoch that takes the libraries' first-call costs out of its time leaves
// nothing behind: the weights, the buffers, no gradients, and the next random draws (dropout's) as they
// would have been.
TEST(WarmUp, LeavesTheWeightsBuffersGradientsAndGeneratorsAsTheyWere) {
  torch::manual_seed(5);
  const std::shared_ptr<models::Network> network =
      training_parts::build_network("mnist_cnn", data::dataset_kind("mnist"));
  const data::Dataset train{"mnist", torch::randn({8, 1, 28, 28}), torch::randint(0, 10, {8}, torch::kLong)};
  std::vector<torch::Tensor> parameters = network->parameters();
  torch::optim::SGD optimizer(parameters, torch::optim::SGDOptions(0.1));
  const training_parts::TrainerState state{&optimizer, torch::Device("cpu"), std::nullopt, nullptr};
  std::vector<torch::Tensor> before;
  for (const torch::Tensor& t : network->parameters()) before.push_back(t.detach().clone());
  for (const torch::Tensor& t : network->buffers()) before.push_back(t.detach().clone());
  const training_parts::GeneratorStates generators = training_parts::capture_generators(state);
  TrainingOptions o;
  o.batch_size = 4;
  training_parts::warm_up_libraries(*network, parameters, train, o, state);
  std::vector<torch::Tensor> after;
  for (const torch::Tensor& t : network->parameters()) after.push_back(t.detach());
  for (const torch::Tensor& t : network->buffers()) after.push_back(t.detach());
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i)
    EXPECT_TRUE(torch::equal(after[i], before[i])) << "tensor " << i;
  for (const torch::Tensor& p : network->parameters()) EXPECT_FALSE(p.grad().defined());
  const torch::Tensor drawn = torch::rand({4});
  training_parts::restore_generators(state, generators);
  EXPECT_TRUE(torch::equal(drawn, torch::rand({4})));
}

// Under bf16 the test loss is taken in fp32, as training takes its loss: from bf16 logits it had 3
// significant digits (two samples read 2.28125 alike).
TEST(Evaluate, TakesTheLossInFp32UnderAutocast) {
  torch::manual_seed(3);
  const std::shared_ptr<models::Network> network =
      training_parts::build_network("mnist_cnn", data::dataset_kind("mnist"));
  const data::Dataset test{"mnist", torch::randn({3, 1, 28, 28}), torch::tensor({1, 7, 4}, torch::kLong)};
  const Evaluation e =
      training_parts::evaluate(*network, test, 3, torch::Device("cpu"), Precision::BF16, false);
  torch::Tensor logits;
  {
    torch::NoGradGuard no_grad;
    const AutocastScope autocast(Precision::BF16, torch::Device("cpu"));
    logits = network->forward(test.images);
  }
  ASSERT_EQ(logits.scalar_type(), torch::kBFloat16) << "the forward pass runs in bf16";
  const double expected =
      torch::nn::functional::cross_entropy(logits.to(torch::kFloat), test.labels).item<double>();
  EXPECT_NEAR(e.loss, expected, 1e-6 * expected);
}

// A run that diverged ends there: only the epochs both runs trained are compared (the second run's
// missing epoch was read past its end), and the table says which trained on alone.
TEST(CompareEpochs, OnlyTheEpochsBothRunsTrainedAreCompared) {
  DeviceComparison c;
  c.first_device = "cpu";
  c.second_device = "cuda:0";
  EpochResult one;
  one.epoch = 1;
  one.train_loss = NAN;
  one.train_accuracy = 0.1;
  one.test.loss = NAN;
  one.test.accuracy = 0.1;
  EpochResult two = one;
  two.epoch = 2;
  c.first.epochs = {one, two};
  c.second.epochs = {one};
  c.second.diverged_epoch = 1;
  const std::vector<Json> records = compare_epochs(c);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(c.rows.size(), 4u);
  EXPECT_EQ(c.min_digits, 17);
  const std::string table = format_comparison_table(c);
  EXPECT_NE(
      table.find("cuda:0 stopped after epoch 1 (diverged) and cpu trained 2: only the epochs both trained "
                 "are compared"),
      std::string::npos)
      << table;
}

TEST(AgreeingSignificantDigits, IdenticalValuesGiveSeventeenAndNeighboursSixteen) {
  EXPECT_EQ(agreeing_significant_digits(0.1, 0.1), 17);
  EXPECT_EQ(agreeing_significant_digits(0.0, -0.0), 17);
  EXPECT_EQ(agreeing_significant_digits(0.1, std::nextafter(0.1, 1.0)), 16);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(agreeing_significant_digits(inf, inf), 17);
  EXPECT_EQ(agreeing_significant_digits(inf, 1e308), 0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(agreeing_significant_digits(nan, nan), 17);  // both diverged alike: bit-identical runs agree
}

// A learnable stand-in for MNIST: class k lights up the k-th of the 7x7 cells of a 4x4 grid, on noise.
void write_split(const fs::path& dir, const std::string& prefix, int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> noise(0, 90), bright(150, 255), label(0, 9);
  data::IdxArray images{{count, 28, 28}, {}}, labels{{count}, {}};
  for (int64_t i = 0; i < count; ++i) {
    const int k = label(rng);
    labels.bytes.push_back(static_cast<uint8_t>(k));
    for (int y = 0; y < 28; ++y) {
      for (int x = 0; x < 28; ++x) {
        const bool lit = y / 7 == k / 4 && x / 7 == k % 4;
        images.bytes.push_back(static_cast<uint8_t>(lit ? bright(rng) : noise(rng)));
      }
    }
  }
  data::write_idx((dir / (prefix + "-images-idx3-ubyte")).string(), images, false);
  data::write_idx((dir / (prefix + "-labels-idx1-ubyte")).string(), labels, false);
}

class Training : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new fs::path(fs::temp_directory_path() / ("batchscope_training_" + std::to_string(getpid())));
    fs::remove_all(*root_);
    fs::create_directories(*root_ / "toy");
    write_split(*root_ / "toy", "train", 600, 1);
    write_split(*root_ / "toy", "t10k", 200, 2);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
    delete trained_;
  }

  static TrainingOptions options(const std::string& out) {
    TrainingOptions o;
    o.model = "mnist_cnn";
    o.data = (*root_ / "toy").string();
    o.epochs = 2;
    o.batch_size = 32;
    o.device = "cpu";
    o.optimizer.lr = 0.02;
    o.out_dir = (*root_ / out).string();
    o.command_line = "test_training";
    return o;
  }

  // A batch study of 32 and 64 to 20% test accuracy, of the options given, into `out`: the energy tests'.
  static BatchStudyOptions energy_study(const TrainingOptions& o, const std::string& out) {
    BatchStudyOptions study;
    study.training = o;
    study.training.out_dir = (*root_ / out).string();
    study.training.target_accuracy = 0.2;
    study.batch_sizes = {32, 64};
    return study;
  }

  // The two-epoch run that several tests look at, trained once.
  static const TrainingOutcome& trained() {
    if (trained_ == nullptr) trained_ = new TrainingOutcome(train_model(options("main")));
    return *trained_;
  }

  static fs::path* root_;
  static TrainingOutcome* trained_;
};

fs::path* Training::root_ = nullptr;
TrainingOutcome* Training::trained_ = nullptr;

TEST_F(Training, LearnsTheToyTaskInTwoEpochs) {
  const TrainingOutcome& run = trained();
  ASSERT_EQ(run.epochs.size(), 2u);
  EXPECT_EQ(run.device, "cpu");
  const EpochResult& last = run.epochs.back();
  EXPECT_GT(last.test.accuracy, 0.9);
  EXPECT_GT(last.train_accuracy, 0.5);
  EXPECT_LT(last.train_loss, run.epochs.front().train_loss);
  EXPECT_EQ(last.test.samples, 200);
  EXPECT_DOUBLE_EQ(last.test.accuracy, static_cast<double>(last.test.correct) / 200.0);
  EXPECT_GT(last.epoch_seconds, 0.0);
  EXPECT_NEAR(last.samples_per_s, 600.0 / last.epoch_seconds, 1e-9 * last.samples_per_s);
}

TEST_F(Training, WritesRunEpochAndEndRecordsAndCheckpoints) {
  const TrainingOutcome& run = trained();
  const std::vector<Json> records = read_jsonl(run.jsonl_path).records;
  ASSERT_EQ(records.size(), 4u);
  const Json& header = records[0];
  EXPECT_EQ(header["type"], "run");
  EXPECT_FALSE(header["run_id"].get<std::string>().empty());
  EXPECT_TRUE(header.contains("libtorch_version"));
  EXPECT_TRUE(header.contains("cpu"));
  EXPECT_EQ(header["command"], "test_training");
  EXPECT_EQ(header["config"]["model"], "mnist_cnn");
  EXPECT_EQ(header["config"]["epochs"], 2);
  EXPECT_EQ(header["config"]["batch_size"], 32);
  EXPECT_EQ(header["config"]["optimizer"]["type"], "momentum");
  EXPECT_EQ(header["config"]["data"]["train_samples"], 600);
  EXPECT_EQ(header["config"]["determinism"]["cuda_switches"], false);
  for (int e = 1; e <= 2; ++e) {
    const Json& r = records[static_cast<std::size_t>(e)];
    const EpochResult& expected = run.epochs[static_cast<std::size_t>(e - 1)];
    EXPECT_EQ(r["type"], "epoch");
    EXPECT_EQ(r["epoch"], e);
    EXPECT_EQ(r["train_loss"].get<double>(), expected.train_loss);
    EXPECT_EQ(r["train_accuracy"].get<double>(), expected.train_accuracy);
    EXPECT_EQ(r["test_loss"].get<double>(), expected.test.loss);
    EXPECT_EQ(r["test_accuracy"].get<double>(), expected.test.accuracy);
    EXPECT_EQ(r["test_correct"], expected.test.correct);
    EXPECT_EQ(r["test_samples"], 200);
    EXPECT_EQ(r["epoch_seconds"].get<double>(), expected.epoch_seconds);
    EXPECT_EQ(r["samples_per_s"].get<double>(), expected.samples_per_s);
    EXPECT_EQ(r["checkpoint"], "checkpoint_epoch" + std::to_string(e) + ".pt");
  }
  EXPECT_EQ(records[3]["type"], "end");
  const fs::path dir = fs::path(run.jsonl_path).parent_path();
  for (const char* name :
       {"checkpoint_epoch1.pt", "checkpoint_epoch2.pt", "checkpoint.pt", "checkpoint.json"}) {
    EXPECT_TRUE(fs::is_regular_file(dir / name)) << name;
  }
  EXPECT_EQ(run.checkpoint_path, (dir / "checkpoint.pt").string());
  std::ifstream info_file(dir / "checkpoint.json");
  const Json info = Json::parse(info_file);
  EXPECT_EQ(info["model"], "mnist_cnn");
  EXPECT_EQ(info["classes"], 10);
  EXPECT_EQ(info["epoch"], 2);
}

TEST_F(Training, EvalOfACheckpointReproducesItsEpochExactly) {
  const TrainingOutcome& run = trained();
  EvalOptions eval;
  eval.checkpoint = fs::path(run.jsonl_path).parent_path().string();
  eval.device = "cpu";
  const CheckpointEvaluation latest = evaluate_checkpoint(eval);
  EXPECT_EQ(latest.model, "mnist_cnn");
  EXPECT_EQ(latest.test.samples, 200);
  EXPECT_EQ(latest.test.correct, run.epochs[1].test.correct);
  EXPECT_EQ(latest.test.loss, run.epochs[1].test.loss);
  EXPECT_EQ(latest.test.accuracy, run.epochs[1].test.accuracy);

  eval.checkpoint = run.epochs[0].checkpoint;
  const CheckpointEvaluation first = evaluate_checkpoint(eval);
  EXPECT_EQ(first.test.loss, run.epochs[0].test.loss);
  EXPECT_EQ(first.test.correct, run.epochs[0].test.correct);
  EXPECT_NE(first.test.loss, latest.test.loss);
}

TEST_F(Training, TheSameSeedGivesIdenticalNumbers) {
  const TrainingOutcome again = train_model(options("again"));
  const TrainingOutcome& run = trained();
  ASSERT_EQ(again.epochs.size(), run.epochs.size());
  for (std::size_t i = 0; i < run.epochs.size(); ++i) {
    EXPECT_EQ(again.epochs[i].train_loss, run.epochs[i].train_loss);
    EXPECT_EQ(again.epochs[i].train_accuracy, run.epochs[i].train_accuracy);
    EXPECT_EQ(again.epochs[i].test.loss, run.epochs[i].test.loss);
    EXPECT_EQ(again.epochs[i].test.correct, run.epochs[i].test.correct);
  }
}

TEST_F(Training, ADifferentSeedGivesDifferentLosses) {
  TrainingOptions o = options("seed1");
  o.seed = 1;
  o.epochs = 1;
  const TrainingOutcome other = train_model(o);
  const TrainingOutcome& run = trained();
  EXPECT_NE(other.epochs[0].train_loss, run.epochs[0].train_loss);
  EXPECT_NE(other.epochs[0].test.loss, run.epochs[0].test.loss);
}

// Two runs in one directory would append to one log and write over each other's checkpoints: the second
// is refused while the first holds it, and nothing of the directory is touched.
TEST_F(Training, ASecondRunIntoADirectoryBeingWrittenIsRefused) {
  TrainingOptions o = options("locked");
  o.epochs = 1;
  o.limit_train = 64;
  o.limit_test = 50;
  {
    const OutputDirectoryLock first(o.out_dir, ::flock, "training run");
    try {
      train_model(o);
      ADD_FAILURE() << "a run into a directory another run holds was not refused";
    } catch (const UserError& error) {
      EXPECT_NE(
          std::string(error.what()).find("is being written by another batchscope training run right now"),
          std::string::npos)
          << error.what();
    }
    EXPECT_FALSE(fs::exists(fs::path(o.out_dir) / "train.jsonl"));
  }
  // Let go, the directory takes the run, and leaves no lock behind.
  train_model(o);
  EXPECT_TRUE(fs::exists(fs::path(o.out_dir) / "train.jsonl"));
  EXPECT_FALSE(fs::exists(fs::path(o.out_dir) / ".lock"));
}

TEST_F(Training, RefusesToReplaceACompleteRunWithoutForce) {
  TrainingOptions o = options("refuse");
  o.epochs = 1;
  o.limit_train = 64;
  o.limit_test = 50;
  train_model(o);
  const fs::path jsonl = fs::path(o.out_dir) / "train.jsonl";
  const auto size = fs::file_size(jsonl);
  try {
    train_model(o);
    ADD_FAILURE() << "a complete run was replaced without --force";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("already holds a complete training run"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("--force"), std::string::npos) << error.what();
  }
  EXPECT_EQ(fs::file_size(jsonl), size);

  // --force keeps the run it replaces until the new one is complete: one stopped after its first epoch
  // leaves it whole in .replaced, and a second --force starts again beside it.
  const std::string complete = testing_support::file_bytes(jsonl.string());
  const fs::path kept = fs::path(o.out_dir) / ".replaced";
  o.force = true;
  o.seed = 5;
  o.epochs = 2;
  o.stop_requested = [] { return true; };
  EXPECT_TRUE(train_model(o).stopped);
  EXPECT_EQ(testing_support::file_bytes((kept / "train.jsonl").string()), complete);
  EXPECT_TRUE(fs::exists(kept / "checkpoint_epoch1.pt"));
  EXPECT_NE(testing_support::file_bytes(jsonl.string()), complete);

  o.stop_requested = nullptr;
  o.epochs = 1;
  const TrainingOutcome replaced = train_model(o);
  const std::vector<Json> records = read_jsonl(replaced.jsonl_path).records;
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0]["config"]["seed"], 5);
  EXPECT_EQ(records[1]["test_samples"], 50);
  EXPECT_FALSE(fs::exists(kept)) << "removed once the new run is complete";
}

TEST(DeviceComparisonTable, DevicesOfTwoKindsRunTheSameComputationOrSayWhatDiffers) {
  DeviceComparison c;
  c.first_device = "cpu";
  c.second_device = "cuda:0";
  c.rows = {{1, "test_accuracy", 0.7734, 0.7813, 1}};
  c.min_digits = 1;
  std::string table = format_comparison_table(c);
  EXPECT_NE(table.find("cpu and cuda:0 agree to 1 significant digits at worst (epoch 1, test_accuracy)"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("the same computation"), std::string::npos) << table;
  EXPECT_NE(table.find("dropout masks (drawn on the host"), std::string::npos) << table;
  EXPECT_EQ(table.find("own generator"), std::string::npos) << table;
  EXPECT_NE(table.find("and fp32 without TF32 on a GPU;"), std::string::npos) << table;
  c.precision = Precision::BF16;
  table = format_comparison_table(c);
  EXPECT_NE(table.find("and bf16 under autocast, and what autocast leaves in fp32 without TF32 on a GPU;"),
            std::string::npos)
      << table;

  // A model whose dropout LibTorch draws inside a module (attention, between recurrent layers).
  c.first.drawn_on_device = {"encoder.layers.0.dropout", "rnn"};
  table = format_comparison_table(c);
  EXPECT_NE(
      table.find("Some random draws (encoder.layers.0.dropout, rnn) come from each device's own generator"),
      std::string::npos)
      << table;
  EXPECT_EQ(table.find("the same computation"), std::string::npos) << table;
}

TEST_F(Training, DeviceIndependentRunsDrawDropoutMasksOnTheHostAndEvalFollowsTheirPrecision) {
  TrainingOptions o = options("independent");
  o.device_independent = true;
  const TrainingOutcome run = train_model(o);
  const TrainingOutcome again = train_model([&] {
    TrainingOptions a = options("independent_again");
    a.device_independent = true;
    return a;
  }());
  ASSERT_EQ(run.epochs.size(), 2u);
  EXPECT_TRUE(run.drawn_on_device.empty());
  for (std::size_t i = 0; i < run.epochs.size(); ++i) {
    EXPECT_EQ(again.epochs[i].train_loss, run.epochs[i].train_loss);
    EXPECT_EQ(again.epochs[i].test.loss, run.epochs[i].test.loss);
  }
  // Same seed, same weights and order: only the masks' generator differs from the plain run.
  EXPECT_NE(run.epochs[0].train_loss, trained().epochs[0].train_loss);
  EXPECT_GT(run.epochs.back().test.accuracy, 0.9);

  const std::vector<Json> records = read_jsonl(run.jsonl_path).records;
  EXPECT_EQ(records[0]["config"]["dropout_masks"], "drawn on the host from the seed");
  EXPECT_EQ(records[0]["config"]["tf32"], "off");
  EXPECT_EQ(read_jsonl(trained().jsonl_path).records[0]["config"]["dropout_masks"], "the device's generator");

  const fs::path dir = fs::path(run.jsonl_path).parent_path();
  EXPECT_TRUE(read_checkpoint_info((dir / "checkpoint.json").string()).tf32_off);
  EXPECT_FALSE(
      read_checkpoint_info((fs::path(trained().jsonl_path).parent_path() / "checkpoint.json").string())
          .tf32_off);
  EvalOptions eval;
  eval.checkpoint = dir.string();
  eval.device = "cpu";
  const CheckpointEvaluation e = evaluate_checkpoint(eval);
  EXPECT_EQ(e.test.loss, run.epochs.back().test.loss);
  EXPECT_EQ(e.test.correct, run.epochs.back().test.correct);
}

TEST_F(Training, ComparingTheCpuWithItselfFindsIdenticalNumbers) {
  TrainingOptions o = options("compare");
  o.epochs = 1;
  o.limit_train = 128;
  const DeviceComparison c = compare_devices(o, "cpu", "cpu");
  EXPECT_EQ(c.first_device, "cpu");
  EXPECT_EQ(c.second_device, "cpu");
  ASSERT_EQ(c.rows.size(), 4u);
  for (const AgreementRow& row : c.rows) EXPECT_EQ(row.digits, 17) << row.quantity;
  EXPECT_EQ(c.min_digits, 17);
  EXPECT_TRUE(fs::is_regular_file(fs::path(o.out_dir) / "cpu" / "train.jsonl"));
  EXPECT_TRUE(fs::is_regular_file(fs::path(o.out_dir) / "cpu_2" / "checkpoint.pt"));
  const std::string table = format_comparison_table(c);
  EXPECT_NE(table.find("cpu and cpu agree to ≥ 15 significant digits"), std::string::npos) << table;
  EXPECT_NE(table.find("test_accuracy"), std::string::npos) << table;
  EXPECT_EQ(table.find("own generator"), std::string::npos) << "one kind of device: one generator";
  EXPECT_EQ(table.find("the same computation"), std::string::npos) << "said only of two kinds of device";

  const std::vector<Json> records = read_jsonl(c.jsonl_path).records;
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0]["type"], "run");
  EXPECT_EQ(records[0]["config"]["dropout_masks"], "drawn on the host from the seed");
  EXPECT_EQ(records[0]["config"]["drawn_on_device"], Json::array());
  EXPECT_EQ(read_jsonl((fs::path(o.out_dir) / "cpu" / "train.jsonl").string())
                .records[0]["config"]["dropout_masks"],
            "drawn on the host from the seed");
  EXPECT_EQ(records[1]["type"], "comparison");
  EXPECT_EQ(records[1]["epoch"], 1);
  EXPECT_EQ(records[1]["train_loss"]["digits"], 17);
  EXPECT_EQ(records[1]["identical"], true);
  EXPECT_EQ(records[2]["type"], "end");
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { compare_devices(o, "cpu", "cpu"); },
      {"compare.jsonl", "already holds a complete comparison of 1 epoch", "give more --epochs"}));
  // More epochs go on with it: each side trains its second epoch after its first, and the comparison is
  // written again over both.
  o.epochs = 2;
  const DeviceComparison more = compare_devices(o, "cpu", "cpu");
  ASSERT_EQ(more.first.epochs.size(), 2u);
  EXPECT_EQ(more.first.epochs[0].train_loss, c.first.epochs[0].train_loss);
  EXPECT_EQ(more.second.epochs[1].train_loss, more.first.epochs[1].train_loss);
  EXPECT_EQ(more.min_digits, 17);
  const std::vector<Json> again = read_jsonl(more.jsonl_path).records;
  ASSERT_EQ(again.size(), 4u);
  EXPECT_EQ(again[1]["epoch"], 1);
  EXPECT_EQ(again[2]["epoch"], 2);
  EXPECT_EQ(again[3]["type"], "end");
  o.epochs = 1;  // fewer than it holds: refused as before
  EXPECT_TRUE(testing_support::refuses_with([&] { compare_devices(o, "cpu", "cpu"); },
                                            {"already holds a complete comparison of 2 epochs"}));
  // --force replaces the whole comparison, both sides kept aside until it is complete: one stopped after
  // its first side leaves the old comparison whole in .replaced.
  const fs::path dir(o.out_dir);
  const std::string old = testing_support::file_bytes(more.jsonl_path);
  o.force = true;
  o.stop_requested = [] { return true; };
  o.epochs = 2;
  compare_devices(o, "cpu", "cpu");
  EXPECT_EQ(testing_support::file_bytes((dir / ".replaced" / "compare.jsonl").string()), old);
  EXPECT_TRUE(fs::exists(dir / ".replaced" / "cpu_2" / "train.jsonl"));
  o.stop_requested = nullptr;
  o.epochs = 1;
  EXPECT_EQ(compare_devices(o, "cpu", "cpu").first.epochs.size(), 1u);
  EXPECT_FALSE(fs::exists(dir / ".replaced")) << "removed once the new comparison is complete";
}

TEST_F(Training, CorruptOrMissingCheckpointsAreUserErrors) {
  const fs::path good = fs::path(trained().jsonl_path).parent_path();
  EvalOptions eval;
  eval.device = "cpu";
  eval.checkpoint = (*root_ / "nowhere").string();
  EXPECT_TRUE(
      testing_support::refuses_with([&] { evaluate_checkpoint(eval); }, {"nowhere", "no such checkpoint"}));

  // The run's other files, given where its weights are meant: said what they are.
  for (const fs::directory_entry& entry : fs::directory_iterator(good)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("resume_epoch", 0) != 0 && name != "train.jsonl") continue;
    eval.checkpoint = entry.path().string();
    EXPECT_TRUE(testing_support::refuses_with([&] { evaluate_checkpoint(eval); },
                                              {name, "not", "give the run's directory, its checkpoint.pt"}));
  }
  // A directory of runs (a batch study's, a comparison's): one of them is named.
  const fs::path study = *root_ / "study";
  fs::create_directories(study / "batch-8");
  fs::copy_file(good / "checkpoint.json", study / "batch-8" / "checkpoint.json");
  eval.checkpoint = study.string();
  EXPECT_TRUE(
      testing_support::refuses_with([&] { evaluate_checkpoint(eval); },
                                    {"holds training runs in its subdirectories (batch-8)", "give one"}));

  const fs::path bad = *root_ / "corrupt";
  fs::create_directories(bad);
  eval.checkpoint = bad.string();
  EXPECT_TRUE(
      testing_support::refuses_with([&] { evaluate_checkpoint(eval); }, {"checkpoint.json", "is missing"}));

  fs::copy_file(good / "checkpoint.json", bad / "checkpoint.json");
  std::ofstream(bad / "checkpoint.pt") << "not a checkpoint";
  try {
    evaluate_checkpoint(eval);
    ADD_FAILURE() << "a corrupt checkpoint was read";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("checkpoint.pt"), std::string::npos) << error.what();
  }

  fs::copy_file(good / "checkpoint.pt", bad / "checkpoint.pt", fs::copy_options::overwrite_existing);
  fs::resize_file(bad / "checkpoint.pt", fs::file_size(bad / "checkpoint.pt") / 2);
  EXPECT_TRUE(testing_support::refuses_with([&] { evaluate_checkpoint(eval); },
                                            {"checkpoint.pt", "is not a readable mnist_cnn checkpoint"}));

  // What checkpoint.json names and is not there is said of checkpoint.json.
  {
    std::ifstream in(good / "checkpoint.json");
    Json info = Json::parse(in);
    info["weights"] = "gone.pt";
    std::ofstream(bad / "checkpoint.json") << info.dump();
    EXPECT_TRUE(testing_support::refuses_with(
        [&] { evaluate_checkpoint(eval); },
        {"checkpoint.json", "names the weights gone.pt, which are not beside it"}));
    info["weights"] = "checkpoint.pt";
    info["data"]["directory"] = (*root_ / "moved").string();
    std::ofstream(bad / "checkpoint.json") << info.dump();
    EXPECT_TRUE(testing_support::refuses_with([&] { evaluate_checkpoint(eval); },
                                              {"checkpoint.json", "names the data directory", "--data"}));
  }

  // A model this build lacks: a name edited (the nearest one offered), or another batchscope's model (the
  // version that trained it named, where the run record beside says).
  {
    std::ifstream in(good / "checkpoint.json");
    Json info = Json::parse(in);
    info["model"] = "mnist_cn";
    std::ofstream(bad / "checkpoint.json") << info.dump();
    const std::string lacks = "which this batchscope (" BATCHSCOPE_VERSION ") lacks";
    EXPECT_TRUE(testing_support::refuses_with(
        [&] { evaluate_checkpoint(eval); },
        {"checkpoint.json", "names the model \"mnist_cn\", " + lacks, "did you mean mnist_cnn? restore"}));
    info["model"] = "vit_b16";
    std::ofstream(bad / "checkpoint.json") << info.dump();
    EXPECT_TRUE(
        testing_support::refuses_with([&] { evaluate_checkpoint(eval); },
                                      {lacks + ";", "evaluate it with the batchscope that trained it"}));
    std::ofstream(bad / "train.jsonl") << R"({"type": "run", "batchscope_version": "9.9.0"})"
                                       << "\n";
    EXPECT_TRUE(
        testing_support::refuses_with([&] { evaluate_checkpoint(eval); },
                                      {lacks + "; batchscope 9.9.0 trained it",
                                       "evaluate it with batchscope 9.9.0, or train again with one of "}));
    fs::remove(bad / "train.jsonl");
    // A model of the zoo that cannot take the images it names: the file's mistake, not the command line's.
    info["model"] = "vgg16";
    std::ofstream(bad / "checkpoint.json") << info.dump();
    EXPECT_TRUE(testing_support::refuses_with([&] { evaluate_checkpoint(eval); },
                                              {"checkpoint.json: vgg16", "restore the checkpoint.json"}));
  }

  // Cut short: the line where it breaks.
  std::ofstream(bad / "checkpoint.json") << "{\n\"model\": ";
  EXPECT_TRUE(testing_support::refuses_with([&] { evaluate_checkpoint(eval); },
                                            {"checkpoint.json:2: is not JSON", "cut short"}));

  std::ofstream(bad / "checkpoint.json")
      << "{\"model\": \"mnist_cnn\", \"data\": {\"directory\": \"x\"}, \"tf32\": \"on\"}";
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { evaluate_checkpoint(eval); },
      {"checkpoint.json", "has a tf32 that is neither \"off\" nor \"default\""}));

  // Weights trained in fp16 are evaluated under fp16 autocast, which a CPU lacks.
  std::ofstream(bad / "checkpoint.json")
      << "{\"model\": \"mnist_cnn\", \"data\": {\"directory\": \"x\"}, \"precision\": \"fp8\"}";
  EXPECT_TRUE(
      testing_support::refuses_with([&] { evaluate_checkpoint(eval); },
                                    {"checkpoint.json", "has a precision that is not fp32, fp16 or bf16"}));
  std::ifstream in(good / "checkpoint.json");
  Json fp16 = Json::parse(in);
  fp16["precision"] = "fp16";
  std::ofstream(bad / "checkpoint.json") << fp16.dump();
  EXPECT_TRUE(testing_support::refuses_with([&] { evaluate_checkpoint(eval); },
                                            {"checkpoint.json", "trained in fp16", "--device cuda"}));
}

TEST_F(Training, RefusesModelsThatCannotTakeMnistAndMissingDevices) {
  TrainingOptions o = options("refused");
  o.model = "vgg16";
  try {
    train_model(o);
    ADD_FAILURE() << "vgg16 was trained on 28x28 images";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("at least 32x32"), std::string::npos) << error.what();
  }
  o.model = "no_such_model";
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(o); },
      {"--model no_such_model is not a known model", "mnist_cnn", "the path of a TorchScript file"}));
  o.model = "mnist_cnn";
  o.device = "cuda:99";
  EXPECT_TRUE(
      testing_support::refuses_with([&] { train_model(o); }, {"device cuda:99 is not available here"}));
  o.device = "tpu";
  EXPECT_TRUE(testing_support::refuses_with([&] { train_model(o); }, {"tpu"}));
  o.device = "cpu";
  o.epochs = 0;
  EXPECT_TRUE(testing_support::refuses_with([&] { train_model(o); }, {"--epochs 0 trains nothing"}));
  EXPECT_TRUE(testing_support::refuses_with([&] { compare_devices(options("refused"), "cpu", "cuda:99"); },
                                            {"cuda:99"}));
  EXPECT_FALSE(fs::exists(*root_ / "refused"));
}

// A learnable stand-in for CIFAR-100 (its train.bin and test.bin): class k of the first 16 lights a row
// of a 4x4 grid of 8x8 cells (k / 4), its outer or inner pair of cells (k mod 2) in channel k / 2 mod 2, on
// noise; mirrored cells, so that the augmentation's flips keep each image's class.
void write_cifar100(const fs::path& dir, int64_t train, int64_t test) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> noise(0, 90), bright(150, 255), label(0, 15);
  for (const auto& [name, count] : {std::pair{"train.bin", train}, std::pair{"test.bin", test}}) {
    data::CifarRecords records;
    records.count = count;
    for (int64_t i = 0; i < count; ++i) {
      const int k = label(rng);
      records.labels.push_back(static_cast<uint8_t>(k));
      for (int c = 0; c < 3; ++c)
        for (int y = 0; y < 32; ++y)
          for (int x = 0; x < 32; ++x) {
            const int cell = x / 8, pair = cell == 0 || cell == 3 ? 0 : 1;
            const bool lit = c == k % 4 / 2 && y / 8 == k / 4 && pair == k % 2;
            records.pixels.push_back(static_cast<uint8_t>(lit ? bright(rng) : noise(rng)));
          }
    }
    data::write_cifar((dir / name).string(), records, data::CifarFile{2, 100});
  }
}

// `o` on a CIFAR-100 stand-in of its own, beside its output directory, in batches of 24.
TrainingOptions on_cifar100(TrainingOptions o, int64_t train, int64_t test) {
  const fs::path colours = o.out_dir + "_colours";
  fs::create_directories(colours);
  write_cifar100(colours, train, test);
  o.data = colours.string();
  o.batch_size = 24;
  return o;
}

// ResNet-18 on 32x32 images trains from 2 samples (its last batch norm sees a 1x1 plane): an epoch's
// last batch, a micro-batch or the noise scale's small batch of one sample is refused before training,
// naming the option that makes it, not a c10::Error after an epoch.
TEST_F(Training, ABatchNormModelRefusesBatchesOfOneSampleBeforeTraining) {
  TrainingOptions o = on_cifar100(options("one_sample"), 49, 24);
  o.model = "resnet18";
  o.epochs = 1;
  EXPECT_TRUE(testing_support::refuses_with([&] { train_model(o); },
                                            {"resnet18 cannot train the last batch of each epoch, 1 image",
                                             "give another --batch, or --limit-train 48"}));
  o.chunk = 2;
  o.batch_size = 25;
  o.data = on_cifar100(options("one_sample_50"), 50, 24).data;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(o); },
      {"a batch of 25 in micro-batches of at most 2 (12×2 + 1)", "give --chunk 3 or more"}));
  o.chunk = 0;
  o.noise_scale = {1, 2, 1};
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(o); }, {"the noise scale's small batch of 1", "give --noise-batch 2 or more"}));
  EXPECT_FALSE(fs::exists(fs::path(o.out_dir) / "train.jsonl"));
}

TEST_F(Training, AModelIsBuiltForItsDatasetsImagesAndClassesAndEvalOnlyForThem) {
  TrainingOptions o = on_cifar100(options("cifar100"), 480, 120);
  const TrainingOutcome run = train_model(o);
  ASSERT_EQ(run.epochs.size(), 2u);
  EXPECT_EQ(run.epochs.back().test.samples, 120);
  EXPECT_GT(run.epochs.back().test.accuracy, 0.5);  // chance is 1/16 among the classes used
  const fs::path dir = fs::path(run.jsonl_path).parent_path();
  const Json info = Json::parse(std::ifstream(dir / "checkpoint.json"));
  EXPECT_EQ(info["input"], Json({3, 32, 32}));
  EXPECT_EQ(info["classes"], 100);
  EXPECT_EQ(info["data"]["name"], "cifar100");

  EvalOptions eval;
  eval.checkpoint = dir.string();
  eval.device = "cpu";
  const CheckpointEvaluation again = evaluate_checkpoint(eval);
  EXPECT_EQ(again.data, "cifar100");
  EXPECT_EQ(again.test.correct, run.epochs.back().test.correct);
  EXPECT_EQ(again.test.loss, run.epochs.back().test.loss);
  eval.data = (*root_ / "toy").string();
  EXPECT_TRUE(
      testing_support::refuses_with([&] { evaluate_checkpoint(eval); },
                                    {(dir / "checkpoint.json").string() +
                                         ": describes a model of CIFAR-100's 3x32x32 images of 100 classes",
                                     "holds MNIST's 1x28x28 images of 10 classes", "give --data cifar100"}));

  // MNIST's images are too small for VGG16, and the sentence says whose images they are.
  o.model = "vgg16";
  o.data = (*root_ / "toy").string();
  o.out_dir = (*root_ / "vgg16").string();
  EXPECT_TRUE(testing_support::refuses_with([&] { train_model(o); }, {"MNIST images are 1x28x28"}));
}

// The numbers of two runs' epochs, bit for bit (the time aside).
void expect_same_epochs(const std::vector<EpochResult>& got, const std::vector<EpochResult>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].epoch, expected[i].epoch);
    EXPECT_EQ(got[i].train_loss, expected[i].train_loss) << "epoch " << i + 1;
    EXPECT_EQ(got[i].train_accuracy, expected[i].train_accuracy) << "epoch " << i + 1;
    EXPECT_EQ(got[i].test.loss, expected[i].test.loss) << "epoch " << i + 1;
    EXPECT_EQ(got[i].test.correct, expected[i].test.correct) << "epoch " << i + 1;
  }
}

std::vector<std::string> record_types(const std::string& jsonl) {
  std::vector<std::string> types;
  for (const Json& r : read_jsonl(jsonl).records) types.push_back(r["type"].get<std::string>());
  return types;
}

TEST_F(Training, AStoppedRunGoesOnAfterItsLastEpochWithTheNumbersOfOneThatNeverStopped) {
  TrainingOptions o = options("stopped");
  o.stop_requested = [] { return true; };
  const TrainingOutcome first = train_model(o);
  EXPECT_TRUE(first.stopped);
  ASSERT_EQ(first.epochs.size(), 1u);
  const fs::path dir(o.out_dir);
  EXPECT_EQ(record_types(first.jsonl_path), (std::vector<std::string>{"run", "epoch"}));
  EXPECT_TRUE(fs::is_regular_file(dir / "resume_epoch1.pt"));
  // A kill in the middle of a write leaves half a line; the run goes on after it all the same.
  std::ofstream(first.jsonl_path, std::ios::app) << "{\"type\": \"epo";

  o.stop_requested = nullptr;
  std::vector<int> told;
  o.on_epoch = [&](const EpochResult& r) { told.push_back(r.epoch); };
  const TrainingOutcome resumed = train_model(o);
  EXPECT_FALSE(resumed.stopped);
  EXPECT_EQ(resumed.resumed_from_epoch, 1);
  EXPECT_EQ(told, (std::vector<int>{1, 2})) << "the earlier epoch is told too, so the table is whole";
  // The optimizer's momentum and the generators went on, not only the weights.
  expect_same_epochs(resumed.epochs, trained().epochs);
  EXPECT_EQ(record_types(resumed.jsonl_path),
            (std::vector<std::string>{"run", "epoch", "resume", "epoch", "end"}));
  const std::vector<Json> records = read_jsonl(resumed.jsonl_path).records;
  EXPECT_EQ(records[2]["from_epoch"], 1);
  EXPECT_EQ(records[2]["config"], records[0]["config"]);
  EXPECT_FALSE(fs::exists(dir / "resume_epoch1.pt"));
  EXPECT_TRUE(fs::is_regular_file(dir / "resume_epoch2.pt"));
  EvalOptions eval;
  eval.checkpoint = o.out_dir;
  eval.device = "cpu";
  EXPECT_EQ(evaluate_checkpoint(eval).test.loss, trained().epochs[1].test.loss);
}

// CIFAR's images are cropped and flipped unless told otherwise; the run record says how, a run told not
// to trains other numbers from the same seed, and a stopped run goes on drawing what one that never stopped
// drew (the draws come from the seed and the epoch), but not without its augmentation.
TEST_F(Training, AugmentedRunsSayHowAndAStoppedOneGoesOnDrawingWhatAnUnstoppedOneDrew) {
  const TrainingOptions o = on_cifar100(options("augmented"), 240, 60);
  const TrainingOutcome whole = train_model(o);
  const Json config = read_jsonl(whole.jsonl_path).records.front()["config"];
  EXPECT_EQ(config["augment"]["crop_padding"], 4);
  EXPECT_EQ(config["augment"]["flip"], true);
  EXPECT_GT(whole.epochs.back().test.accuracy, 0.15);  // chance is 1/16 among the classes used

  TrainingOptions plain = o;
  plain.augment = data::Augmentation{};
  plain.out_dir = (*root_ / "augmented_not").string();
  const TrainingOutcome unaugmented = train_model(plain);
  EXPECT_NE(unaugmented.epochs.front().train_loss, whole.epochs.front().train_loss);
  EXPECT_FALSE(read_jsonl(unaugmented.jsonl_path).records.front()["config"].contains("augment"));
  EXPECT_FALSE(read_jsonl(trained().jsonl_path).records.front()["config"].contains("augment"))
      << "MNIST's images are not augmented unless told";

  TrainingOptions stopped = o;
  stopped.out_dir = (*root_ / "augmented_stopped").string();
  stopped.stop_requested = [] { return true; };
  ASSERT_TRUE(train_model(stopped).stopped);
  stopped.stop_requested = nullptr;
  TrainingOptions other = stopped;
  other.augment = data::Augmentation{4, false};
  EXPECT_TRUE(testing_support::refuses_with([&] { train_model(other); },
                                            {"holds an interrupted training run of other options (augment "
                                             "was crop:4+flip there and is crop:4 here)",
                                             "give --augment crop:4+flip to go on with it"}));
  expect_same_epochs(train_model(stopped).epochs, whole.epochs);
}

// A schedule's rates reach the optimizer: a step down after epoch 1 trains epoch 1 as the constant rate does
// and epoch 2 otherwise. The record says the schedule and each epoch's last rate; a warmed-up, cosine run
// stopped after an epoch goes on with the rates of one that never stopped; more epochs go on after a step
// schedule, whose rates do not depend on the count, and are refused after a cosine, whose rates do.
TEST_F(Training, AScheduledRateReachesEachStepAndAStoppedRunGoesOnWithIt) {
  TrainingOptions o = options("stepped");
  ASSERT_TRUE(read_lr_decay("step:1", o.lr_schedule));
  const TrainingOutcome stepped = train_model(o);
  const TrainingOutcome& constant = trained();
  ASSERT_EQ(stepped.epochs.size(), 2u);
  EXPECT_EQ(stepped.epochs[0].train_loss, constant.epochs[0].train_loss);
  EXPECT_EQ(stepped.epochs[0].test.loss, constant.epochs[0].test.loss);
  EXPECT_NE(stepped.epochs[1].train_loss, constant.epochs[1].train_loss);
  EXPECT_DOUBLE_EQ(stepped.epochs[0].lr.value_or(0), 0.02);
  EXPECT_DOUBLE_EQ(stepped.epochs[1].lr.value_or(0), 0.002);
  const std::vector<Json> records = read_jsonl(stepped.jsonl_path).records;
  EXPECT_EQ(records[0]["config"]["lr_schedule"]["decay"], "step");
  EXPECT_EQ(records[0]["config"]["lr_schedule"]["milestones"], Json({1}));
  EXPECT_DOUBLE_EQ(records[2]["lr"].get<double>(), 0.002);
  EXPECT_FALSE(read_jsonl(constant.jsonl_path).records[0]["config"].contains("lr_schedule"));
  EXPECT_FALSE(read_jsonl(constant.jsonl_path).records[1].contains("lr"));

  TrainingOptions warm = options("warm");
  warm.epochs = 3;
  warm.lr_schedule.warmup_epochs = 1;
  warm.lr_schedule.warmup_from = 0.002;
  ASSERT_TRUE(read_lr_decay("cosine", warm.lr_schedule));
  const TrainingOutcome whole = train_model(warm);
  EXPECT_NE(whole.epochs[0].train_loss, constant.epochs[0].train_loss);
  // 600 images in batches of 32: 19 steps an epoch, the first epoch's last at 18/19 of the way up.
  EXPECT_DOUBLE_EQ(whole.epochs[0].lr.value_or(0), 0.002 + (0.02 - 0.002) * 18 / 19);
  EXPECT_LT(whole.epochs[2].lr.value_or(1), 0.001);
  TrainingOptions stopped = warm;
  stopped.out_dir = (*root_ / "warm_stopped").string();
  stopped.stop_requested = [] { return true; };
  ASSERT_TRUE(train_model(stopped).stopped);
  stopped.stop_requested = nullptr;
  const TrainingOutcome resumed = train_model(stopped);
  expect_same_epochs(resumed.epochs, whole.epochs);
  EXPECT_EQ(resumed.epochs[2].lr, whole.epochs[2].lr);
  warm.epochs = 4;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(warm); },
      {"already holds a complete training run whose cosine schedule ends at epoch 3", "--force"}));

  // A study takes complete runs as they are, and says why another count is another cosine run.
  BatchStudyOptions study;
  study.training = warm;
  study.training.out_dir = (*root_ / "warm_study").string();
  study.training.epochs = 2;
  study.batch_sizes = {32};
  run_batch_study(study);
  study.training.epochs = 3;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { run_batch_study(study); },
      {"holds a complete training run of other options (epochs was 2 there and is 3 here: its cosine "
       "schedule's rates depend on the count)"}));

  o.epochs = 3;
  const TrainingOutcome more = train_model(o);
  EXPECT_EQ(more.resumed_from_epoch, 2);
  ASSERT_EQ(more.epochs.size(), 3u);
  EXPECT_DOUBLE_EQ(more.epochs[2].lr.value_or(0), 0.002);
}

// An update beyond float's range in an epoch of one step: that step's loss was finite, its update made
// the weights infinite. The run diverged in that epoch, not one epoch later when the loss shows it.
TEST_F(Training, ARunWhoseWeightsAreNotFiniteAtAnEpochsEndDivergedThere) {
  TrainingOptions o = options("diverged_weights");
  o.epochs = 3;
  o.limit_train = 32;  // one step an epoch
  // Within float's range; the decay term (100 times a weight) makes every update of a weight above 0.012
  // overflow, so that the step's loss is finite and the weights after it are not.
  o.optimizer.lr = 3e38;
  o.optimizer.weight_decay = 100;
  const TrainingOutcome run = train_model(o);
  ASSERT_EQ(run.epochs.size(), 1u);
  EXPECT_TRUE(std::isfinite(run.epochs[0].train_loss));
  EXPECT_FALSE(run.epochs[0].weights_finite);
  EXPECT_EQ(run.diverged_epoch, 1);
  const std::vector<Json> records = read_jsonl(run.jsonl_path).records;
  EXPECT_EQ(records[1]["weights_finite"], false);
  EXPECT_EQ(records.back()["diverged_epoch"], 1);
  // Read back, the run is complete and diverged in epoch 1.
  o.epochs = 4;
  EXPECT_TRUE(testing_support::refuses_with([&] { train_model(o); }, {"which diverged in epoch 1"}));
  // A healthy epoch's record does not carry the field.
  EXPECT_FALSE(read_jsonl(trained().jsonl_path).records[1].contains("weights_finite"));
}

// A rate far too large: the training loss overflows to NaN, the run ends after that epoch, complete (its
// weights are lost whatever follows), and its records read back, the loss written as null, so that more
// epochs are refused naming the divergence and a batch study takes the run as it is and says so.
TEST_F(Training, ARunWhoseTrainingLossIsNotFiniteEndsThereAndReadsBackAsDiverged) {
  TrainingOptions o = options("diverged");
  o.epochs = 3;
  o.limit_train = 128;
  o.optimizer.lr = 1e6;
  const TrainingOutcome run = train_model(o);
  ASSERT_TRUE(run.diverged_epoch.has_value());
  EXPECT_EQ(run.epochs.size(), static_cast<std::size_t>(*run.diverged_epoch));
  EXPECT_FALSE(std::isfinite(run.epochs.back().train_loss));
  const std::vector<Json> records = read_jsonl(run.jsonl_path).records;
  EXPECT_TRUE(records[run.epochs.size()]["train_loss"].is_null());
  EXPECT_EQ(records.back()["type"], "end");
  EXPECT_EQ(records.back()["diverged_epoch"], *run.diverged_epoch);
  o.epochs = 5;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(o); }, {"already holds a complete training run, which diverged in epoch " +
                                    std::to_string(*run.diverged_epoch),
                                "--force"}));

  BatchStudyOptions s;
  s.training = options("diverged_study");
  s.training.limit_train = 128;
  s.training.epochs = 3;
  s.training.optimizer.lr = 1e6;
  s.batch_sizes = {32};
  const BatchStudy first = run_batch_study(s);
  ASSERT_EQ(first.rows.size(), 1u);
  EXPECT_EQ(first.rows[0].outcome.diverged_epoch, run.diverged_epoch);
  const BatchStudy again = run_batch_study(s);  // the kept run, read back
  EXPECT_TRUE(again.rows[0].outcome.reused);
  EXPECT_EQ(again.rows[0].outcome.diverged_epoch, run.diverged_epoch);
  EXPECT_NE(format_batch_study(again).find("| 32 | 1e+06 | diverged in epoch " +
                                           std::to_string(*run.diverged_epoch) + " |"),
            std::string::npos)
      << format_batch_study(again);
  std::ifstream json_file(again.json_path);
  EXPECT_EQ(Json::parse(json_file)["rows"][0]["diverged_epoch"], *run.diverged_epoch);
}

// --channels-last: the record and checkpoint.json say so, the convolutions' weights train (and are saved)
// NHWC, eval of the checkpoint follows the layout and gives the last epoch's numbers exactly, and a
// stopped run goes on in it bit for bit.
TEST_F(Training, AChannelsLastRunTrainsNhwcAndEvalAndAStoppedRunFollowIt) {
  TrainingOptions o = options("nhwc");
  o.channels_last = true;
  const TrainingOutcome run = train_model(o);
  const Json config = read_jsonl(run.jsonl_path).records.front()["config"];
  EXPECT_EQ(config["memory_format"], "channels_last");
  EXPECT_FALSE(read_jsonl(trained().jsonl_path).records.front()["config"].contains("memory_format"));
  // The weights trained, and were saved, NHWC; the contiguous run's stayed NCHW. (A convolution of one
  // input channel is both.)
  const auto multichannel_convolution = [](const std::string& weights) {
    const std::shared_ptr<models::Network> model =
        training_parts::build_network("mnist_cnn", data::dataset_kind("mnist"));
    torch::serialize::InputArchive archive;
    archive.load_from(weights);
    model->load(archive);
    for (const torch::Tensor& p : model->parameters()) {
      if (p.dim() == 4 && p.size(1) > 1) return p;
    }
    return torch::Tensor();
  };
  const torch::Tensor nhwc = multichannel_convolution(run.checkpoint_path);
  ASSERT_TRUE(nhwc.defined());
  EXPECT_TRUE(nhwc.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_FALSE(nhwc.is_contiguous());
  EXPECT_TRUE(multichannel_convolution(trained().checkpoint_path).is_contiguous());
  EvalOptions eval;
  eval.checkpoint = o.out_dir;
  eval.device = "cpu";
  const CheckpointEvaluation again = evaluate_checkpoint(eval);
  EXPECT_EQ(again.test.loss, run.epochs.back().test.loss);
  EXPECT_EQ(again.test.correct, run.epochs.back().test.correct);

  TrainingOptions stopped = o;
  stopped.out_dir = (*root_ / "nhwc_stopped").string();
  stopped.stop_requested = [] { return true; };
  ASSERT_TRUE(train_model(stopped).stopped);
  stopped.stop_requested = nullptr;
  expect_same_epochs(train_model(stopped).epochs, run.epochs);
}

std::string number_text(const char* format, double value) {
  char text[48];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// The weights and buffers of a checkpoint, in order.
std::vector<torch::Tensor> saved_tensors(const std::string& model, const data::DatasetKind& kind,
                                         const std::string& weights) {
  const std::shared_ptr<models::Network> network = training_parts::build_network(model, kind);
  torch::serialize::InputArchive archive;
  archive.load_from(weights);
  network->load(archive);
  std::vector<torch::Tensor> tensors = network->parameters();
  for (const torch::Tensor& b : network->buffers()) tensors.push_back(b);
  return tensors;
}

// --noise-scale: each epoch's record has the noise scale, measured on batches of its own; the epochs train
// exactly as without it (dropout's draws and a batch norm's running statistics are put back), a stopped
// run measures again what an unstopped one measured, and a big batch larger than the data is refused.
TEST_F(Training, TheNoiseScaleIsMeasuredAfterEachEpochAndLeavesTrainingAsItWas) {
  TrainingOptions o = options("noise");
  o.noise_scale = {3, 4};
  const TrainingOutcome run = train_model(o);
  expect_same_epochs(run.epochs, trained().epochs);  // mnist_cnn's dropout draws as without it
  const std::vector<Json> records = read_jsonl(run.jsonl_path).records;
  EXPECT_EQ(records.front()["config"]["noise_scale"]["big_batch"], 128);
  EXPECT_EQ(records.front()["config"]["noise_scale"]["groups"], 3);
  EXPECT_FALSE(read_jsonl(trained().jsonl_path).records.front()["config"].contains("noise_scale"));
  EXPECT_FALSE(read_jsonl(trained().jsonl_path).records[1].contains("noise_scale"));
  for (const EpochResult& r : run.epochs) {
    ASSERT_TRUE(r.noise_scale) << "epoch " << r.epoch;
    EXPECT_EQ(r.noise_scale->small_batch, 32);
    EXPECT_EQ(r.noise_scale->big_batch, 128);
    EXPECT_EQ(r.noise_scale->groups, 3);
    EXPECT_GT(r.noise_scale->trace, 0);
    EXPECT_GT(r.noise_scale->seconds, 0);
    EXPECT_EQ(records[r.epoch]["noise_scale"]["trace"], r.noise_scale->trace);
  }
  EXPECT_NE(run.epochs[0].noise_scale->trace, run.epochs[1].noise_scale->trace);
  EXPECT_EQ(saved_tensors("mnist_cnn", data::dataset_kind("mnist"), run.checkpoint_path)[0].equal(
                saved_tensors("mnist_cnn", data::dataset_kind("mnist"), trained().checkpoint_path)[0]),
            true);

  TrainingOptions stopped = o;
  stopped.out_dir = (*root_ / "noise_stopped").string();
  stopped.stop_requested = [] { return true; };
  ASSERT_TRUE(train_model(stopped).stopped);
  stopped.stop_requested = nullptr;
  const TrainingOutcome resumed = train_model(stopped);
  ASSERT_EQ(resumed.epochs.size(), 2u);
  for (int e = 0; e < 2; ++e) {
    ASSERT_TRUE(resumed.epochs[e].noise_scale);
    EXPECT_EQ(resumed.epochs[e].noise_scale->trace, run.epochs[e].noise_scale->trace) << "epoch " << e + 1;
    EXPECT_EQ(resumed.epochs[e].noise_scale->b_simple, run.epochs[e].noise_scale->b_simple);
  }

  // A network with batch norms (ResNet-18 on colour images): the running statistics after the
  // measurement are those of training.
  TrainingOptions with_norms = on_cifar100(options("noise_norms"), 96, 48);
  with_norms.model = "resnet18";
  with_norms.noise_scale = {2, 2};
  TrainingOptions without = with_norms;
  without.noise_scale = {};
  without.out_dir = (*root_ / "noise_norms_not").string();
  const TrainingOutcome measured = train_model(with_norms);
  expect_same_epochs(measured.epochs, train_model(without).epochs);
  const std::vector<torch::Tensor> a =
      saved_tensors("resnet18", data::dataset_kind("cifar100"), measured.checkpoint_path);
  const std::vector<torch::Tensor> b = saved_tensors("resnet18", data::dataset_kind("cifar100"),
                                                     (fs::path(without.out_dir) / "checkpoint.pt").string());
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equal(b[i])) << "tensor " << i;

  // A big batch of more images than the split holds is made of all the batches it holds; fewer than two
  // are refused.
  TrainingOptions capped = options("noise_capped");
  capped.epochs = 1;
  capped.batch_size = 150;
  capped.noise_scale = {2, 8};
  const TrainingOutcome four = train_model(capped);
  EXPECT_EQ(read_jsonl(four.jsonl_path).records.front()["config"]["noise_scale"]["group"], 4);
  EXPECT_EQ(four.epochs.front().noise_scale->big_batch, 600);
  // A small batch of its own: the same weights measured with batches of 16, and training as it was.
  TrainingOptions own = options("noise_own_batch");
  own.epochs = 1;
  own.noise_scale = {2, 4, 16};
  const TrainingOutcome sixteen = train_model(own);
  EXPECT_EQ(sixteen.epochs.front().noise_scale->small_batch, 16);
  EXPECT_EQ(sixteen.epochs.front().noise_scale->big_batch, 64);
  EXPECT_EQ(sixteen.epochs.front().train_loss, trained().epochs.front().train_loss);
  TrainingOptions too_big = options("noise_too_big");
  too_big.batch_size = 400;
  too_big.noise_scale = {2, 8};
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(too_big); },
      {"--noise-scale compares one batch with two or more together, and the 600 training images "
       "hold 1 batch of 400",
       "give a --batch of at most 300"}));
  too_big.batch_size = 32;
  too_big.noise_scale = {2, 1};
  EXPECT_TRUE(testing_support::refuses_with([&] { train_model(too_big); }, {"give --noise-group 2 or more"}));
}

// --eval-every: evaluations within each epoch, outside its time, that change nothing of the training; a
// target reached by one of them gives the run's steps and seconds to it at that resolution; the records
// read back, so a run taken again has the same target.
TEST_F(Training, EvaluationsWithinAnEpochFindTheTargetAtTheirStepAndChangeNothingElse) {
  TrainingOptions o = options("within");
  o.eval_every = 5;  // 19 steps an epoch: at 5, 10 and 15
  const TrainingOutcome run = train_model(o);
  expect_same_epochs(run.epochs, trained().epochs);
  ASSERT_EQ(run.epochs[0].evaluations.size(), 3u);
  EXPECT_EQ(run.epochs[0].evaluations[1].step, 10);
  EXPECT_GT(run.epochs[0].evaluations[1].training_seconds, run.epochs[0].evaluations[0].training_seconds);
  EXPECT_LT(run.epochs[0].evaluations[2].training_seconds, run.epochs[0].epoch_seconds);
  EXPECT_EQ(run.epochs[0].evaluations[2].test.samples, 200);
  const std::vector<Json> records = read_jsonl(run.jsonl_path).records;
  EXPECT_EQ(records.front()["config"]["eval_every"], 5);
  EXPECT_FALSE(read_jsonl(trained().jsonl_path).records.front()["config"].contains("eval_every"));
  EXPECT_EQ(records[1]["evaluations"].size(), 3u);
  EXPECT_EQ(records[1]["evaluations"][1]["test_correct"], run.epochs[0].evaluations[1].test.correct);

  // A target that the evaluation at step 10 reaches (and not, by construction, any before it).
  double target = 0;
  for (const StepEvaluation& e : run.epochs[0].evaluations) {
    if (e.step <= 10) target = std::max(target, e.test.accuracy);
  }
  ASSERT_GT(target, 0);
  TrainingOptions aimed = o;
  aimed.out_dir = (*root_ / "within_target").string();
  aimed.target_accuracy = target;
  const TrainingOutcome reached = train_model(aimed);
  ASSERT_EQ(reached.target_epoch, std::optional<int>(1));
  ASSERT_TRUE(reached.target_step);
  EXPECT_LE(*reached.target_step, 10);
  EXPECT_EQ(reached.epochs.size(), 1u) << "the run ends after the epoch that reached it";
  const std::optional<TargetReached> first = first_reaching(target, run.epochs);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->step, reached.target_step);
  EXPECT_EQ(
      *reached.target_seconds,
      reached.epochs[0].evaluations[static_cast<std::size_t>(*reached.target_step / 5 - 1)].training_seconds);
  EXPECT_EQ(read_jsonl(reached.jsonl_path).records.back()["target_step"], *reached.target_step);
  // Taken again as it is: the same target, read back from the records.
  aimed.reuse_complete = true;
  const TrainingOutcome again = train_model(aimed);
  EXPECT_TRUE(again.reused);
  EXPECT_EQ(again.target_step, reached.target_step);
  EXPECT_EQ(again.target_seconds, reached.target_seconds);

  // A damaged evaluation is refused at its line.
  const fs::path damaged = *root_ / "within_damaged";
  fs::create_directories(damaged);
  std::ifstream in(run.jsonl_path);
  std::ofstream out(damaged / "train.jsonl");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (n == 2) {
      Json epoch = Json::parse(line);
      epoch["evaluations"][1]["step"] = 3;
      line = epoch.dump();
    }
    out << line << "\n";
  }
  out.close();
  TrainingOptions reread = o;
  reread.out_dir = damaged.string();
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(reread); }, {"train.jsonl:2: is damaged", "evaluations whose steps do not rise"}));
}

// bf16 under autocast (fp16's autocast is a GPU's), its loss scaled with a small scaler that grows after 4
// clean steps: the run records its precision and scaler, each epoch its skipped steps and scale; a stopped
// run goes on with the scaler's scale and count, as one that never stopped; eval evaluates the weights in
// bf16 as the epochs did.
TEST_F(Training, MixedPrecisionTrainsUnderAutocastWithItsLossScalerAndGoesOnWithIt) {
  const auto mixed = [](const std::string& out) {
    TrainingOptions o = options(out);
    // 2 steps an epoch, and few test images: a CPU without bf16 instructions emulates it, slowly.
    o.limit_train = 64;
    o.limit_test = 64;
    o.precision = Precision::BF16;
    o.loss_scale = LossScale::Dynamic;
    o.loss_scaler = {/*init_scale=*/1024.0, /*growth_factor=*/2.0, /*backoff_factor=*/0.5,
                     /*growth_interval=*/3};
    return o;
  };
  const TrainingOutcome whole = train_model(mixed("bf16"));
  ASSERT_EQ(whole.epochs.size(), 2u);
  // 2 clean steps an epoch: the scale grows at the third, in the second epoch; a run that went on without
  // the scaler's count of clean steps would not have grown it.
  EXPECT_EQ(whole.epochs[0].skipped_steps, std::optional<int64_t>(0));
  EXPECT_EQ(whole.epochs[0].loss_scale, std::optional<double>(1024.0));
  EXPECT_EQ(whole.epochs[1].loss_scale, std::optional<double>(2048.0));
  const std::vector<Json> records = read_jsonl(whole.jsonl_path).records;
  const Json& config = records.at(0).at("config");
  EXPECT_EQ(config.at("precision"), "bf16");
  EXPECT_EQ(config.at("loss_scale"), "dynamic");
  EXPECT_EQ(config.at("loss_scaler").at("init_scale"), 1024.0);
  EXPECT_EQ(config.at("loss_scaler").at("growth_interval"), 3);
  EXPECT_EQ(records.at(2).at("skipped_steps"), 0);
  EXPECT_EQ(records.at(2).at("loss_scale"), 2048.0);
  EXPECT_FALSE(read_jsonl(trained().jsonl_path).records.at(1).contains("skipped_steps")) << "fp32, unscaled";
  std::ifstream info_file(fs::path(whole.jsonl_path).parent_path() / "checkpoint.json");
  EXPECT_EQ(Json::parse(info_file).at("precision"), "bf16");

  // Autocast ran: the same steps in fp32 give other losses.
  TrainingOptions fp32 = mixed("bf16_as_fp32");
  fp32.precision = Precision::FP32;
  fp32.epochs = 1;
  EXPECT_NE(train_model(fp32).epochs[0].train_loss, whole.epochs[0].train_loss);

  TrainingOptions stopped = mixed("bf16_stopped");
  stopped.stop_requested = [] { return true; };
  ASSERT_EQ(train_model(stopped).epochs.size(), 1u);
  stopped.stop_requested = nullptr;
  const TrainingOutcome resumed = train_model(stopped);
  EXPECT_EQ(resumed.resumed_from_epoch, 1);
  expect_same_epochs(resumed.epochs, whole.epochs);
  EXPECT_EQ(resumed.epochs[1].loss_scale, std::optional<double>(2048.0)) << "the scaler's count went on";

  EvalOptions eval;
  eval.checkpoint = fs::path(whole.jsonl_path).parent_path().string();
  eval.device = "cpu";
  EXPECT_EQ(evaluate_checkpoint(eval).test.loss, whole.epochs[1].test.loss);

  TrainingOptions fp16 = options("fp16");
  fp16.precision = Precision::FP16;
  fp16.loss_scale = LossScale::Dynamic;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(fp16); }, {"--precision fp16 trains under autocast on a GPU only", "bf16"}));
}

TEST_F(Training, MoreEpochsGoOnAfterACompleteRunWithTheNumbersOfOneGivenThemFromTheStart) {
  TrainingOptions o = options("extended");
  o.epochs = 1;
  const TrainingOutcome one = train_model(o);
  ASSERT_EQ(one.epochs.size(), 1u);
  const auto first_bytes = fs::file_size(one.jsonl_path);

  o.epochs = 2;
  const TrainingOutcome two = train_model(o);
  EXPECT_EQ(two.resumed_from_epoch, 1);
  expect_same_epochs(two.epochs, trained().epochs);
  // The first session's records are kept as they were, its end record among them.
  EXPECT_EQ(record_types(two.jsonl_path),
            (std::vector<std::string>{"run", "epoch", "end", "resume", "epoch", "end"}));
  std::ifstream in(two.jsonl_path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_GT(text.size(), first_bytes);
  const std::vector<Json> records = read_jsonl(two.jsonl_path).records;
  EXPECT_EQ(records[0]["config"]["epochs"], 1);
  EXPECT_EQ(records[3]["config"]["epochs"], 2);
  EXPECT_EQ(records[3]["from_epoch"], 1);

  // The run now holds 2 epochs: the same count again is complete, fewer are refused, more go on again.
  EXPECT_TRUE(testing_support::refuses_with([&] { train_model(o); },
                                            {"already holds a complete training run", "--force"}));
  o.epochs = 1;
  EXPECT_TRUE(
      testing_support::refuses_with([&] { train_model(o); }, {"already holds a complete training run"}));
  // Another option besides the epochs is named, not hidden behind them.
  o.epochs = 3;
  o.optimizer.lr = 0.05;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(o); }, {"train.jsonl:4:", "holds a complete training run of other options",
                                "optimizer.lr was 0.02 there and is 0.05 here"}));
  EXPECT_EQ(record_types(two.jsonl_path).size(), 6u);

  // A run that reached its target has nothing to go on with: more epochs leave it complete.
  TrainingOptions t = options("extended_target");
  t.epochs = 1;
  t.target_accuracy = trained().epochs[0].test.accuracy;
  train_model(t);
  t.epochs = 3;
  EXPECT_TRUE(
      testing_support::refuses_with([&] { train_model(t); }, {"already holds a complete training run"}));
}

TEST_F(Training, AStoppedRunOfOtherOptionsIsRefusedNamingTheDifference) {
  TrainingOptions o = options("other_options");
  o.epochs = 2;
  o.limit_train = 128;
  o.stop_requested = [] { return true; };
  train_model(o);
  const fs::path jsonl = fs::path(o.out_dir) / "train.jsonl";
  const auto size = fs::file_size(jsonl);
  o.stop_requested = nullptr;
  o.optimizer.lr = 0.05;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(o); }, {"train.jsonl:1", "holds an interrupted training run of other options",
                                "optimizer.lr was 0.02 there and is 0.05 here", "--force"}));
  EXPECT_EQ(fs::file_size(jsonl), size);
  EXPECT_TRUE(fs::is_regular_file(fs::path(o.out_dir) / "checkpoint_epoch1.pt"));

  // An epoch record that names another epoch's weights is refused with its line, never loaded.
  {
    std::vector<std::string> lines;
    std::ifstream in(jsonl);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    Json epoch = Json::parse(lines[1]);
    epoch["checkpoint"] = "checkpoint.pt";
    std::ofstream out(fs::path(o.out_dir) / "damaged.jsonl");
    out << lines[0] << "\n" << epoch.dump() << "\n";
  }
  fs::copy_file(jsonl, fs::path(o.out_dir) / "kept.jsonl");
  fs::rename(fs::path(o.out_dir) / "damaged.jsonl", jsonl);
  o.optimizer.lr = 0.02;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(o); },
      {"train.jsonl:2", "does not name its epoch's checkpoint \"checkpoint_epoch1.pt\""}));
  fs::rename(fs::path(o.out_dir) / "kept.jsonl", jsonl);

  // A line that is no epoch of this run is named, not skipped.
  std::ofstream(jsonl, std::ios::app) << "{\"type\": \"point\"}\n";
  o.optimizer.lr = 0.02;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(o); }, {"train.jsonl:3", "\"point\" record, which train does not write"}));
  o.force = true;
  EXPECT_EQ(train_model(o).resumed_from_epoch, 0);
  EXPECT_EQ(record_types(jsonl.string()), (std::vector<std::string>{"run", "epoch", "epoch", "end"}));
}

// A model without dropout or batch norms, as a TorchScript file for MNIST's images: a strided convolution
// and a linear layer. Nothing in it depends on how many samples a pass holds.
std::string save_plain_cnn(const fs::path& dir) {
  torch::manual_seed(5);
  torch::jit::Module m("Plain");
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_parameter("cw", (0.3 * torch::randn({4, 1, 3, 3})).requires_grad_(), false);
  m.register_parameter("cb", torch::zeros({4}).requires_grad_(), false);
  m.register_parameter("fw", (0.03 * torch::randn({10, 676})).requires_grad_(), false);
  m.register_parameter("fb", torch::zeros({10}).requires_grad_(), false);
  m.define(
      "def forward(self, x):\n"
      "  h = torch.relu(torch.conv2d(x, self.cw, self.cb, [2, 2]))\n"
      "  return torch.linear(torch.flatten(h, 1), self.fw, self.fb)\n");
  const std::string path = (dir / "plain_cnn.pt").string();
  m.save(path);
  return path;
}

// A TorchScript file given by a relative path: eval from another directory rebuilds the module from where
// the file was (it refused: "cannot be read now; restore the TorchScript file").
TEST_F(Training, ACheckpointOfARelativeTorchScriptFileIsEvaluatedFromAnotherDirectory) {
  const fs::path file = save_plain_cnn(*root_);
  TrainingOptions o = options("relative_model");
  o.model = "./" + file.filename().string();
  o.epochs = 1;
  const fs::path before = fs::current_path();
  struct Back {
    fs::path to;
    ~Back() { fs::current_path(to); }
  } back{before};
  fs::current_path(file.parent_path());
  const TrainingOutcome run = train_model(o);
  fs::current_path("/");
  EvalOptions eval;
  eval.checkpoint =
      fs::absolute(fs::path(file.parent_path()) / fs::path(run.jsonl_path).parent_path()).string();
  eval.device = "cpu";
  const CheckpointEvaluation e = evaluate_checkpoint(eval);
  ASSERT_EQ(run.epochs.size(), 1u);
  EXPECT_EQ(e.test.loss, run.epochs[0].test.loss);
}

// train --chunk: a batch of 40 run as micro-batches of at most 16 (14, 13 and 13) takes the undivided batch's
// steps (to rounding, the slices' losses weighted by their shares); a chunk that holds the batch is the run
// without one, to the bit; the record says so only where the batch accumulates; a stopped run goes on only
// with its chunk; the noise scale's small batch is the chunk; a batch study says which sizes accumulated.
TEST_F(Training, ABatchAccumulatedInMicroBatchesTakesTheWholeBatchsStepsAndSaysSo) {
  TrainingOptions whole = options("chunk_whole");
  whole.model = save_plain_cnn(*root_);
  whole.epochs = 1;
  whole.batch_size = 40;  // 15 steps of 600 images
  const TrainingOutcome a = train_model(whole);
  TrainingOptions split = whole;
  split.out_dir = (*root_ / "chunk_split").string();
  split.chunk = 16;
  const TrainingOutcome b = train_model(split);
  ASSERT_EQ(a.epochs.size(), 1u);
  ASSERT_EQ(b.epochs.size(), 1u);
  const EpochResult &x = a.epochs[0], &y = b.epochs[0];
  EXPECT_LT(x.test.loss, 2.0) << "the model learns, so that a wrong step shows";
  EXPECT_NEAR(y.train_loss, x.train_loss, 1e-5 * x.train_loss);
  EXPECT_NEAR(y.test.loss, x.test.loss, 1e-5 * x.test.loss);
  EXPECT_NEAR(y.train_accuracy, x.train_accuracy, 2.0 / 600);
  EXPECT_NEAR(static_cast<double>(y.test.correct), static_cast<double>(x.test.correct), 2.0);
  EXPECT_EQ(read_jsonl(b.jsonl_path).records.front()["config"]["chunk"], 16);
  EXPECT_FALSE(read_jsonl(a.jsonl_path).records.front()["config"].contains("chunk"));
  // What the chunk is for: less memory at once. A batch's activations are 40 x 2 x 676 floats (the
  // convolution's output and its ReLU's), a micro-batch's at most 16 x 2 x 676: 130 KB less.
  ASSERT_TRUE(x.peak_memory_bytes && y.peak_memory_bytes);
  EXPECT_LT(*y.peak_memory_bytes + 100000, *x.peak_memory_bytes);
  EXPECT_EQ(read_jsonl(b.jsonl_path).records[1]["peak_memory_bytes"], *y.peak_memory_bytes);
  EXPECT_EQ(training_parts::read_earlier_run(split.out_dir).epochs[0].peak_memory_bytes, y.peak_memory_bytes);

  TrainingOptions holds = whole;
  holds.out_dir = (*root_ / "chunk_holds").string();
  holds.chunk = 40;
  const TrainingOutcome c = train_model(holds);
  expect_same_epochs(c.epochs, a.epochs);
  EXPECT_FALSE(read_jsonl(c.jsonl_path).records.front()["config"].contains("chunk"));

  // mnist_cnn, with dropout: stopped after an epoch in micro-batches of 8, it goes on only with them.
  TrainingOptions stopped = options("chunk_stopped");
  stopped.chunk = 8;
  stopped.limit_train = 128;
  stopped.noise_scale.groups = 2;
  stopped.noise_scale.group = 2;
  stopped.stop_requested = [] { return true; };
  const TrainingOutcome first = train_model(stopped);
  ASSERT_EQ(first.epochs.size(), 1u);
  ASSERT_TRUE(first.epochs[0].noise_scale);
  EXPECT_EQ(first.epochs[0].noise_scale->small_batch, 8) << "one pass holds a chunk";
  EXPECT_EQ(read_jsonl(first.jsonl_path).records.front()["config"]["noise_scale"]["small_batch"], 8);
  stopped.stop_requested = nullptr;
  stopped.chunk = 0;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(stopped); },
      {"holds an interrupted training run of other options",
       "each batch ran in micro-batches of 8 there and runs whole here", "give --chunk 8 to go on with it"}));
  stopped.chunk = 8;
  EXPECT_EQ(train_model(stopped).resumed_from_epoch, 1);

  // Where a batch does not fit, the refusal says what does: micro-batches, and for the evaluation smaller
  // batches. Under a limit on LibTorch's CPU memory that a batch of 300 passes, and the test split's 200
  // images at once too, and micro-batches of 20 and evaluation batches of 10 do not (LibTorch 2.x's CPU
  // convolutions unfold a batch's patches at once: 31.6 MiB for 50 images).
  {
    TrainingOptions big = options("chunk_big");
    big.epochs = 1;
    big.batch_size = 300;
    big.force = true;
    std::optional<TrainingOutcome> fitted;
    {
      const cpu_memory::ScopedLimit limit(cpu_memory::current_bytes() + (40 << 20));
      EXPECT_TRUE(testing_support::refuses_with(
          [&] { train_model(big); },
          {"a training step of batch 300 does not fit in cpu's memory (CPU out of memory",
           "give a --chunk below 300",
           "batchscope maxbatch --model mnist_cnn --input 1,28,28 --classes 10 --optimizer momentum --device "
           "cpu"}));
      big.chunk = 20;
      EXPECT_TRUE(testing_support::refuses_with(
          [&] { train_model(big); },
          {"evaluating the test split in batches of 200 does not fit in cpu's memory",
           "give a smaller --eval-batch"}));
      big.eval_batch_size = 10;
      fitted = train_model(big);
    }
    ASSERT_EQ(fitted->epochs.size(), 1u);
    // eval takes the batches the run evaluated in, and so its numbers.
    EvalOptions eval;
    eval.checkpoint = big.out_dir;
    eval.device = "cpu";
    const CheckpointEvaluation again = evaluate_checkpoint(eval);
    EXPECT_EQ(again.test.loss, fitted->epochs[0].test.loss);
  }

  BatchStudyOptions study_options;
  study_options.training = options("chunk_study");
  study_options.training.epochs = 1;
  study_options.training.limit_train = 128;
  study_options.training.chunk = 16;
  study_options.batch_sizes = {8, 40};
  const BatchStudy study = run_batch_study(study_options);
  const std::string table = format_batch_study(study);
  EXPECT_NE(table.find("batches above 16 accumulated in micro-batches of at most 16"), std::string::npos)
      << table;
  EXPECT_NE(table.find("| 40 (14 + 2×13) |"), std::string::npos) << table;
  EXPECT_NE(table.find("| 8 |"), std::string::npos) << table;
  std::ifstream json_file(study.json_path);
  const Json json = Json::parse(json_file);
  EXPECT_EQ(json["chunk"], 16);
  EXPECT_TRUE(json["rows"][0]["chunk"].is_null());
  EXPECT_EQ(json["rows"][1]["chunk"], 16);
  EXPECT_EQ(json["rows"][1]["peak_memory_bytes"], *study.rows[1].peak_memory_bytes);
  EXPECT_NE(table.find("| peak memory |"), std::string::npos) << table;
  EXPECT_EQ(read_jsonl(study.rows[1].outcome.jsonl_path).records.front()["config"]["chunk"], 16);
}

// The chunk --chunk auto takes for the largest micro-batch that fits: as few micro-batches as that
// allows, of an even size, from 64 on in eights where those still fit.
TEST(EvenChunk, SplitsABatchIntoAsFewEvenMicroBatchesAsFit) {
  EXPECT_EQ(even_chunk(4096, 1537), 1368);  // 1368 + 1368 + 1360, not 1537 + 1537 + 1022
  EXPECT_EQ(even_chunk(4096, 2048), 2048);
  EXPECT_EQ(even_chunk(4096, 2047), 1368);
  EXPECT_EQ(even_chunk(300, 130), 104);   // 104 + 104 + 92
  EXPECT_EQ(even_chunk(40, 16), 14);      // 14 + 14 + 12: below 64, not rounded to 16
  EXPECT_EQ(even_chunk(1000, 999), 504);  // two of 500 would do; 504 and 496 keep to eights
  EXPECT_EQ(even_chunk(130, 65), 65);     // 65 + 65: 72 does not fit
  EXPECT_EQ(even_chunk(7, 1), 1);
  EXPECT_EQ(even_chunk(300, 300), 0) << "a batch that fits runs whole";
  EXPECT_EQ(even_chunk(300, 1000), 0);
}

// --chunk auto: under a memory limit that a whole batch of 300 does not fit in, the run searches for the
// largest micro-batch that does and trains in even micro-batches below it, as the same --chunk given
// would, to the bit; the run record says what the search found; a stopped run goes on with its chunk
// without searching; a batch that fits trains whole; a batch study's larger sizes search from what a
// smaller size found.
TEST_F(Training, ChunkAutoTrainsInTheLargestEvenMicroBatchesThatFit) {
  TrainingOptions o = options("chunk_auto");
  o.batch_size = 300;
  o.eval_batch_size = 10;  // what fits beside the model under the limit (see the test above)
  o.chunk_auto = true;
  o.stop_requested = [] { return true; };
  std::optional<TrainingOutcome> found, given;
  {
    const cpu_memory::ScopedLimit limit(cpu_memory::current_bytes() + (40 << 20));
    found = train_model(o);
    ASSERT_TRUE(found->chunk_search);
    const ChunkSearch& s = *found->chunk_search;
    EXPECT_EQ(s.batch, 300);
    EXPECT_GT(s.largest_fitting, 0);
    EXPECT_LT(s.largest_fitting, 300) << "a whole batch of 300 does not fit under the limit";
    EXPECT_EQ(s.chunk, even_chunk(300, s.largest_fitting));
    EXPECT_EQ(found->chunk, s.chunk);
    EXPECT_GE(s.tries, 4) << "300 fails; bisecting below it takes tries; then the confirmation";
    EXPECT_EQ(s.held_bytes, 300 * (28 * 28 * 4 + 8));
    EXPECT_EQ(s.margin, kChunkSearchMargin);
    ASSERT_EQ(found->epochs.size(), 1u);
    const Json header = read_jsonl(found->jsonl_path).records.front();
    EXPECT_EQ(header["config"]["chunk"], s.chunk);
    EXPECT_EQ(header["chunk_search"]["largest_fitting"], s.largest_fitting);
    EXPECT_EQ(header["chunk_search"]["tries"], s.tries);
    EXPECT_FALSE(header["config"].contains("chunk_auto")) << "the run is the same as with its chunk given";

    TrainingOptions explicit_chunk = o;
    explicit_chunk.chunk_auto = false;
    explicit_chunk.chunk = s.chunk;
    explicit_chunk.out_dir = (*root_ / "chunk_given").string();
    given = train_model(explicit_chunk);
  }
  expect_same_epochs(found->epochs, given->epochs);
  EXPECT_FALSE(given->chunk_search);

  // Without the limit a search would train whole batches; the stopped run goes on in its micro-batches.
  o.stop_requested = nullptr;
  const TrainingOutcome resumed = train_model(o);
  EXPECT_EQ(resumed.resumed_from_epoch, 1);
  EXPECT_FALSE(resumed.chunk_search) << "no search where a run goes on";
  EXPECT_EQ(resumed.chunk, found->chunk);
  ASSERT_EQ(resumed.epochs.size(), 2u);

  // A batch that fits trains whole, as without a chunk.
  TrainingOptions small = options("chunk_auto_whole");
  small.epochs = 1;
  small.limit_train = 128;
  small.chunk_auto = true;
  const TrainingOutcome whole = train_model(small);
  ASSERT_TRUE(whole.chunk_search);
  EXPECT_EQ(whole.chunk_search->chunk, 0);
  EXPECT_EQ(whole.chunk_search->largest_fitting, 32);
  EXPECT_EQ(whole.chunk, 0);
  EXPECT_FALSE(read_jsonl(whole.jsonl_path).records.front()["config"].contains("chunk"));

  // A study of 8, 150 and 300 under the limit: 8 fits whole, 150 searches from 150, 300 from what fitted
  // beside 150 (no more fits beside a larger batch).
  BatchStudyOptions study_options;
  study_options.training = options("chunk_auto_study");
  study_options.training.epochs = 1;
  study_options.training.eval_batch_size = 10;
  study_options.training.limit_train = 300;
  study_options.training.chunk_auto = true;
  study_options.batch_sizes = {8, 150, 300};
  std::optional<BatchStudy> study;
  {
    const cpu_memory::ScopedLimit limit(cpu_memory::current_bytes() + (40 << 20));
    study = run_batch_study(study_options);
  }
  ASSERT_EQ(study->rows.size(), 3u);
  const std::optional<ChunkSearch>& at_8 = study->rows[0].outcome.chunk_search;
  const std::optional<ChunkSearch>& at_150 = study->rows[1].outcome.chunk_search;
  const std::optional<ChunkSearch>& at_300 = study->rows[2].outcome.chunk_search;
  ASSERT_TRUE(at_8 && at_150 && at_300);
  EXPECT_EQ(at_8->chunk, 0);
  EXPECT_GT(at_150->chunk, 0);
  EXPECT_EQ(at_150->started_at, 0);
  EXPECT_EQ(at_300->started_at, at_150->largest_fitting);
  EXPECT_EQ(at_300->bound_from_batch, 150);
  EXPECT_LE(at_300->largest_fitting, at_150->largest_fitting);
  EXPECT_EQ(at_300->chunk, even_chunk(300, at_300->largest_fitting));
  const std::string table = format_batch_study(*study);
  EXPECT_NE(table.find("batches that did not fit accumulated in the largest even micro-batches that did "
                       "(--chunk auto)"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("| 8 |"), std::string::npos) << table;
  const int64_t c = at_300->chunk;
  const std::string row_300 = "| 300 (" + micro_batch_text(micro_batch_sizes(300, c)) + ") |";
  EXPECT_NE(table.find(row_300), std::string::npos) << table;
  std::ifstream json_file(study->json_path);
  const Json json = Json::parse(json_file);
  EXPECT_EQ(json["chunk"], "auto");
  EXPECT_TRUE(json["rows"][0]["chunk"].is_null());
  EXPECT_EQ(json["rows"][2]["chunk"], c);
}

// train measures the device's energy over each epoch's training, its evaluations left out: a source of a
// constant 50 W gives 50 J for each second of epoch_seconds, and each evaluation within the epoch its energy
// so far; the records hold them and read them back; a batch study has a column and its least energy to the
// target; --no-energy measures none and says so in the run record.
TEST_F(Training, TheEnergyOfEachEpochsTrainingIsMeasuredWithoutItsEvaluations) {
  TrainingOptions o = options("energy");
  o.epochs = 1;
  o.eval_every = 1;  // an evaluation after each step but the last: time that the energy must leave out
  o.idle_seconds = 0;  // no idle baseline: the gross energy alone (the next test has one)
  o.open_power = [](const c10::Device&, std::string&) -> std::unique_ptr<power::PowerSource> {
    return std::make_unique<power::testing::FakePowerSource>(power::testing::PowerCurve::constant(50),
                                                             power::steady_now_ms, 0.01);
  };
  const TrainingOutcome run = train_model(o);
  ASSERT_EQ(run.epochs.size(), 1u);
  const EpochResult& e = run.epochs[0];
  ASSERT_TRUE(e.energy_j);
  EXPECT_NEAR(*e.energy_j, 50 * e.epoch_seconds, 0.02 * 50 * e.epoch_seconds);
  ASSERT_EQ(e.evaluations.size(), 18u);
  for (const StepEvaluation& s : e.evaluations) {
    ASSERT_TRUE(s.training_joules);
    EXPECT_NEAR(*s.training_joules, 50 * s.training_seconds, 0.02 * 50 * s.training_seconds + 1e-3);
  }
  const std::vector<Json> records = read_jsonl(run.jsonl_path).records;
  EXPECT_EQ(records[0]["power"]["available"], true);
  EXPECT_EQ(records[0]["power"]["method"], "fake energy counter");
  EXPECT_TRUE(records[0]["power"]["idle"].is_null());
  EXPECT_FALSE(records[1].contains("energy_above_idle_j"));
  EXPECT_FALSE(records[0]["config"].contains("power")) << "how energy is read is no option of the run";
  EXPECT_EQ(records[1]["energy_j"], *e.energy_j);
  EXPECT_EQ(records[1]["evaluations"][3]["training_joules"], *e.evaluations[3].training_joules);
  const EpochResult back = training_parts::read_earlier_run(o.out_dir).epochs[0];
  EXPECT_EQ(back.energy_j, e.energy_j);
  EXPECT_EQ(back.evaluations[3].training_joules, e.evaluations[3].training_joules);

  TrainingOptions off = o;
  off.out_dir = (*root_ / "energy_off").string();
  off.eval_every = 0;
  off.measure_energy = false;
  const TrainingOutcome none = train_model(off);
  EXPECT_FALSE(none.epochs[0].energy_j);
  const Json header = read_jsonl(none.jsonl_path).records.front();
  EXPECT_EQ(header["power"]["available"], false);
  EXPECT_NE(header["power"]["reason"].get<std::string>().find("--no-energy"), std::string::npos);
  EXPECT_FALSE(read_jsonl(none.jsonl_path).records[1].contains("energy_j"));
  // Nor is the evaluations' memory the training's: the 200 test images at once hold more than a step of
  // 32, yet the epoch evaluated after every step peaks as the one evaluated at its end only.
  ASSERT_TRUE(e.peak_memory_bytes && none.epochs[0].peak_memory_bytes);
  EXPECT_LE(*e.peak_memory_bytes, *none.epochs[0].peak_memory_bytes * 21 / 20);

  BatchStudyOptions study_options = energy_study(o, "energy_study");
  study_options.training.eval_every = 0;
  const BatchStudy study = run_batch_study(study_options);
  const std::string table = format_batch_study(study);
  EXPECT_NE(table.find("| energy to target |"), std::string::npos) << table;
  EXPECT_NE(table.find(" Least energy: batch "), std::string::npos) << table;
  std::ifstream json_file(study.json_path);
  const Json json = Json::parse(json_file);
  ASSERT_TRUE(json["rows"][0]["energy_to_target_j"].is_number()) << json["rows"][0].dump();
  EXPECT_EQ(json["rows"][0]["energy_to_target_j"], *study.rows[0].outcome.epochs[0].energy_j);
  const int64_t least =
      json["rows"][0]["energy_to_target_j"] < json["rows"][1]["energy_to_target_j"] ? 32 : 64;
  EXPECT_EQ(json["least_energy_to_target"], least);
}

// With an idle baseline: a device that draws 30 W for the baseline's window and 50 W from then on trains
// each epoch at 20 W above idle. The run record holds the baseline, each epoch record its idle power and
// its energy above idle (read back as written), and a batch study measures the baseline once, for its
// first run, and names the least energy above idle to the target beside the gross one.
TEST_F(Training, EachEpochsEnergyAboveIdleIsItsEnergyLessTheIdleDrawOverItsTrainingTime) {
  TrainingOptions o = options("energy_above_idle");
  o.limit_train = 256;
  o.idle_seconds = 0.25;
  auto opened = std::make_shared<int>(0);
  o.open_power = [opened](const c10::Device&, std::string&) -> std::unique_ptr<power::PowerSource> {
    ++*opened;
    // 30 W for the 250 ms after the source is opened, which the baseline starts at once.
    power::testing::PowerCurve curve{
        [](double t_ms) { return t_ms < 250 ? 30.0 : 50.0; },
        [](double t_ms) { return t_ms < 250 ? 30 * t_ms / 1000 : 7.5 + 50 * (t_ms - 250) / 1000; }};
    return std::make_unique<power::testing::FakePowerSource>(curve, power::steady_now_ms, 0.01);
  };
  const TrainingOutcome run = train_model(o);
  ASSERT_TRUE(run.idle.has_value());
  // 30 W, and a little more where the baseline began late on a loaded machine (each ms of its 250 ms
  // window taken from the 50 W after it adds 0.08 W): up to 25 ms late.
  EXPECT_GE(run.idle->avg_power_w, 30 - 0.01);
  EXPECT_LT(run.idle->avg_power_w, 32);
  ASSERT_EQ(run.epochs.size(), 2u);
  const std::vector<Json> records = read_jsonl(run.jsonl_path).records;
  EXPECT_EQ(records[0]["power"]["idle"]["power_w"], run.idle->avg_power_w);
  for (int i = 0; i < 2; ++i) {
    const EpochResult& e = run.epochs[static_cast<std::size_t>(i)];
    ASSERT_TRUE(e.energy_j && e.idle_power_w);
    EXPECT_EQ(*e.idle_power_w, run.idle->avg_power_w);
    ASSERT_TRUE(e.energy_above_idle_j());
    // The epoch draws 50 W throughout: above the baseline, 50 W less what the baseline measured.
    const double above_w = 50 - run.idle->avg_power_w;
    EXPECT_NEAR(*e.energy_above_idle_j(), above_w * e.epoch_seconds, 0.05 * above_w * e.epoch_seconds);
    EXPECT_EQ(records[static_cast<std::size_t>(i) + 1]["energy_above_idle_j"], *e.energy_above_idle_j());
  }
  const EpochResult back = training_parts::read_earlier_run(o.out_dir).epochs[1];
  ASSERT_TRUE(back.energy_above_idle_j());
  EXPECT_EQ(back.idle_power_w, run.epochs[1].idle_power_w);
  EXPECT_EQ(back.energy_above_idle_j(), run.epochs[1].energy_above_idle_j());

  BatchStudyOptions study_options = energy_study(o, "energy_above_idle_study");
  study_options.training.epochs = 1;
  *opened = 0;
  const BatchStudy study = run_batch_study(study_options);
  ASSERT_EQ(study.rows.size(), 2u);
  EXPECT_EQ(*opened, 2) << "each run opens the device's source";
  // The second run took the first's baseline, to the bit, without measuring one of its own.
  ASSERT_TRUE(study.rows[0].outcome.idle && study.rows[1].outcome.idle);
  EXPECT_EQ(study.rows[1].outcome.idle->avg_power_w, study.rows[0].outcome.idle->avg_power_w);
  std::ifstream json_file(study.json_path);
  const Json json = Json::parse(json_file);
  for (int i = 0; i < 2; ++i) {
    const Json& row = json["rows"][static_cast<std::size_t>(i)];
    const EpochResult& e = study.rows[static_cast<std::size_t>(i)].outcome.epochs[0];
    ASSERT_TRUE(row["energy_to_target_above_idle_j"].is_number()) << row.dump();
    EXPECT_DOUBLE_EQ(row["energy_to_target_above_idle_j"].get<double>(), *e.energy_above_idle_j());
    EXPECT_EQ(row["idle_power_w"], *e.idle_power_w);
  }
  const int64_t least =
      json["rows"][0]["energy_to_target_above_idle_j"] < json["rows"][1]["energy_to_target_above_idle_j"]
          ? 32
          : 64;
  EXPECT_EQ(json["least_energy_to_target_above_idle"], least);
  const std::string table = format_batch_study(study);
  EXPECT_NE(table.find(" Above the idle draw ("), std::string::npos) << table;
}

// train --deterministic off: recorded in the run's determinism, a run to go on with only under the same
// setting, and on a CPU the same numbers as a deterministic run (it changes a GPU's settings alone).
// The scope only switches flags of LibTorch's context, which a build without CUDA holds too: a CUDA
// device's scope runs here as it does on a GPU, without touching one.
TEST(Determinism, WithoutItTheRunKeepsLibTorchsCudnnSettingsAndRecordsThem) {
  auto& context = at::globalContext();
  const bool benchmark = context.benchmarkCuDNN();
  const torch::Device cuda(torch::kCUDA, 0);
  context.setBenchmarkCuDNN(true);
  {
    const training_parts::DeterminismScope loose(cuda, /*tf32_off=*/false, /*deterministic=*/false);
    EXPECT_TRUE(context.benchmarkCuDNN());  // left as the run found it
    const Json r = loose.record();
    EXPECT_EQ(r["deterministic"], "off");
    EXPECT_EQ(r["cudnn_benchmark"], true);
    EXPECT_EQ(r["cudnn_deterministic"], context.deterministicCuDNN());
    EXPECT_EQ(r["deterministic_algorithms"], context.deterministicAlgorithms() ? "on" : "off");
    EXPECT_EQ(r["tf32"], "default");
  }
  {
    const training_parts::DeterminismScope strict(cuda, /*tf32_off=*/true, /*deterministic=*/true);
    EXPECT_FALSE(context.benchmarkCuDNN());
    EXPECT_TRUE(context.deterministicCuDNN());
    EXPECT_EQ(strict.record()["cudnn_benchmark"], false);
    EXPECT_EQ(strict.record()["tf32"], "off");
  }
  EXPECT_TRUE(context.benchmarkCuDNN());  // restored after
  context.setBenchmarkCuDNN(benchmark);
  // On a CPU there is nothing of cuDNN's to say.
  EXPECT_EQ(training_parts::DeterminismScope(torch::Device("cpu"), false, false).record(),
            Json({{"cuda_switches", false}, {"deterministic", "off"}}));
}

TEST_F(Training, ARunWithoutDeterminismSaysSoAndGoesOnOnlySo) {
  TrainingOptions o = options("not_deterministic");
  o.epochs = 2;
  o.limit_train = 128;
  o.deterministic = false;
  o.stop_requested = [] { return true; };
  const TrainingOutcome loose = train_model(o);
  ASSERT_EQ(loose.epochs.size(), 1u);
  const Json header = read_jsonl((fs::path(o.out_dir) / "train.jsonl").string()).records.at(0);
  EXPECT_EQ(header["config"]["determinism"], Json({{"cuda_switches", false}, {"deterministic", "off"}}));
  o.stop_requested = nullptr;
  o.deterministic = true;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { train_model(o); },
      {"train.jsonl:1", "holds an interrupted training run of other options", "determinism", "--force"}));
  TrainingOptions same = options("deterministic");
  same.epochs = 1;
  same.limit_train = 128;
  const TrainingOutcome strict = train_model(same);
  EXPECT_EQ(strict.epochs.at(0).train_loss, loose.epochs.at(0).train_loss);
  EXPECT_EQ(strict.epochs.at(0).test.loss, loose.epochs.at(0).test.loss);
}

TEST_F(Training, StopsAtTheFirstEpochThatReachesTheTargetAccuracy) {
  TrainingOptions o = options("target");
  o.epochs = 5;
  o.target_accuracy = trained().epochs[0].test.accuracy;
  const TrainingOutcome run = train_model(o);
  ASSERT_EQ(run.target_epoch, std::optional<int>(1));
  expect_same_epochs(run.epochs, {trained().epochs[0]});
  const std::vector<Json> records = read_jsonl(run.jsonl_path).records;
  EXPECT_EQ(records[0]["config"]["target_accuracy"], *o.target_accuracy);
  EXPECT_EQ(records.back()["type"], "end");
  EXPECT_EQ(records.back()["target_epoch"], 1);

  o.out_dir = (*root_ / "target_missed").string();
  o.epochs = 1;
  o.target_accuracy = 1.0;
  o.limit_train = 64;
  const TrainingOutcome missed = train_model(o);
  EXPECT_FALSE(missed.target_epoch.has_value());
  EXPECT_TRUE(read_jsonl(missed.jsonl_path).records.back()["target_epoch"].is_null());
  o.target_accuracy = 0.0;
  EXPECT_TRUE(
      testing_support::refuses_with([&] { train_model(o); }, {"a target accuracy must lie above 0%"}));
}

TEST(LearningRateScaling, ScalesFromTheReferenceBatch) {
  EXPECT_DOUBLE_EQ(scaled_lr(0.01, 256, 64, LrScaling::Linear), 0.04);
  EXPECT_DOUBLE_EQ(scaled_lr(0.01, 16, 64, LrScaling::Linear), 0.0025);
  EXPECT_DOUBLE_EQ(scaled_lr(0.01, 256, 64, LrScaling::Sqrt), 0.02);
  EXPECT_DOUBLE_EQ(scaled_lr(0.01, 256, 64, LrScaling::None), 0.01);
  EXPECT_EQ(lr_scaling_from_string("linear"), LrScaling::Linear);
  EXPECT_EQ(lr_scaling_from_string("sqrt"), LrScaling::Sqrt);
  EXPECT_EQ(lr_scaling_from_string("none"), LrScaling::None);
  EXPECT_FALSE(lr_scaling_from_string("cosine").has_value());
}

TEST_F(Training, ABatchStudyTrainsEachSizeToTheTargetAndGoesOnFromWhatItHas) {
  // 128 images: the toy takes two epochs there. Batch 32 of the study trains as this run does.
  TrainingOptions direct = options("study_direct");
  direct.limit_train = 128;
  const TrainingOutcome reference = train_model(direct);
  ASSERT_LT(reference.epochs[0].test.accuracy, reference.epochs[1].test.accuracy);
  BatchStudyOptions s;
  s.training = options("study");
  s.training.limit_train = 128;
  s.training.epochs = 2;
  s.training.target_accuracy = reference.epochs[1].test.accuracy;
  s.batch_sizes = {32, 64, 32};
  s.lr_scaling = LrScaling::Linear;
  std::vector<int64_t> started;
  s.on_batch = [&](int64_t batch, double, const std::string&) { started.push_back(batch); };
  const BatchStudy study = run_batch_study(s);
  EXPECT_EQ(started, (std::vector<int64_t>{32, 64})) << "each size once";
  ASSERT_EQ(study.rows.size(), 2u);
  EXPECT_EQ(study.reference_batch, 32);
  const BatchStudyRow& small = study.rows[0];
  const BatchStudyRow& large = study.rows[1];
  EXPECT_DOUBLE_EQ(small.lr, 0.02);
  EXPECT_DOUBLE_EQ(large.lr, 0.04);
  EXPECT_EQ(small.dir, (*root_ / "study" / "batch-32").string());
  expect_same_epochs(small.outcome.epochs, reference.epochs);
  ASSERT_EQ(small.outcome.target_epoch, std::optional<int>(2));
  EXPECT_EQ(small.steps_per_epoch, 4);
  EXPECT_EQ(large.steps_per_epoch, 2);
  EXPECT_DOUBLE_EQ(*small.seconds_to_target,
                   small.outcome.epochs[0].epoch_seconds + small.outcome.epochs[1].epoch_seconds);
  EXPECT_EQ(
      read_jsonl((fs::path(large.dir) / "train.jsonl").string()).records[0]["config"]["optimizer"]["lr"],
      0.04);

  std::ifstream json_file(study.json_path);
  const Json j = Json::parse(json_file);
  EXPECT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["batch_size"], 32);
  EXPECT_EQ(j["rows"][0]["target_epoch"], 2);
  EXPECT_EQ(j["rows"][0]["steps_to_target"], 8);
  EXPECT_EQ(j["rows"][0]["samples_to_target"], 256);
  ASSERT_EQ(j["rows"][0]["curve"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["curve"][1]["epoch"], 2);
  EXPECT_DOUBLE_EQ(j["rows"][0]["curve"][1]["training_seconds"].get<double>(), *small.seconds_to_target);
  EXPECT_DOUBLE_EQ(j["rows"][0]["curve"][1]["test_accuracy"].get<double>(),
                   small.outcome.epochs[1].test.accuracy);
  EXPECT_EQ(j["lr_scaling"], "linear");
  EXPECT_EQ(j["augment"], "none");
  EXPECT_EQ(format_batch_study(study).find("augmented"), std::string::npos);
  BatchStudy cropped = study;
  cropped.augment = data::Augmentation{4, true};
  cropped.channels_last = true;
  cropped.lr_schedule.warmup_epochs = 2;
  cropped.lr_schedule.warmup_from = 0.02;
  EXPECT_NE(format_batch_study(cropped).find("; learning rate warmed up over 2 epochs from 0.02; training "
                                             "images augmented crop:4+flip; channels-last; seconds"),
            std::string::npos)
      << format_batch_study(cropped);
  EXPECT_TRUE(j["lr_schedule"].is_null());
  EXPECT_EQ(j["channels_last"], false);
  // The plot: a line per batch size, a point per epoch at its running training time, the target dashed.
  const PlotScript plot = time_to_accuracy_plot(study);
  EXPECT_NE(plot.data.find("# batch 32 (lr 0.02)\n# training_s test_accuracy_pct epoch\n" +
                           gp_number(small.outcome.epochs[0].epoch_seconds) + " " +
                           gp_number(100 * small.outcome.epochs[0].test.accuracy) + " 1\n"),
            std::string::npos)
      << plot.data;
  EXPECT_NE(plot.data.find("\n\n\n# batch 64 (lr 0.04)"), std::string::npos) << plot.data;
  EXPECT_NE(plot.body.find("index 1 using 1:2"), std::string::npos) << plot.body;
  EXPECT_NE(plot.body.find(gp_number(100 * *s.training.target_accuracy) + " with lines dt 2"),
            std::string::npos)
      << plot.body;
  if (find_program("gnuplot")) {
    EXPECT_EQ(study.plot_files,
              (std::vector<std::string>{(*root_ / "study" / "time_to_accuracy.png").string(),
                                        (*root_ / "study" / "time_to_accuracy.svg").string()}));
    for (const std::string& file : study.plot_files) EXPECT_GT(fs::file_size(file), 0u) << file;
    EXPECT_EQ(study.plot_warnings, std::vector<std::string>{});
  } else {
    EXPECT_TRUE(study.plot_files.empty());
    EXPECT_NE(study.plot_skipped.find("gnuplot was not found"), std::string::npos) << study.plot_skipped;
  }
  // What draws it again by hand, or where gnuplot is installed later.
  EXPECT_GT(fs::file_size(*root_ / "study" / "time_to_accuracy.gp"), 0u);
  EXPECT_GT(fs::file_size(*root_ / "study" / "time_to_accuracy.dat"), 0u);

  const std::string table = format_batch_study(study);
  EXPECT_NE(table.find("| 32 | 0.02 | 2 | 8 |"), std::string::npos) << table;
  if (!large.outcome.target_epoch) {
    EXPECT_NE(table.find("| 64 | 0.04 | not in 2 |"), std::string::npos) << table;
    EXPECT_NE(table.find("Fastest to "), std::string::npos) << table;
    EXPECT_EQ(j["fastest_to_target"], 32);
  }

  // Three sizes that reached the target in 40, 20 and 12 steps, 10 (1 + 96 / B) exactly, each with a noise
  // scale: the table's B_noise column and the fit of B_crit.
  BatchStudy fitted = study;
  fitted.rows.clear();
  for (const auto& [batch, steps_per_epoch] : {std::pair{32, 20}, std::pair{96, 10}, std::pair{480, 6}}) {
    BatchStudyRow row = small;
    row.batch_size = batch;
    row.steps_per_epoch = steps_per_epoch;
    // A peak memory for two of them; the third's records predate it.
    row.peak_memory_bytes = batch == 480 ? std::nullopt : std::optional<int64_t>(3 << 20);
    NoiseScale n;
    n.b_simple = 90;
    n.b_simple_stderr = 5;
    row.outcome.epochs[1].noise_scale = n;
    fitted.rows.push_back(row);
  }
  // A target reached within its epoch counts its own steps and seconds: 20 + 7 steps, not 2 epochs' 40.
  BatchStudy within = fitted;
  within.rows[0].outcome.target_step = 7;
  within.rows[0].outcome.target_seconds = 0.25;
  within.eval_every = 7;
  const std::string within_table = format_batch_study(within);
  EXPECT_NE(within_table.find("| 32 | 0.02 | 2 | 27 | " +
                              number_text("%.1f", small.outcome.epochs[0].epoch_seconds + 0.25) + " |"),
            std::string::npos)
      << within_table;
  EXPECT_NE(within_table.find("the test split evaluated every 7 steps too"), std::string::npos)
      << within_table;
  EXPECT_NE(within_table.find("the steps are to the first evaluation every 7 steps that reached it"),
            std::string::npos)
      << within_table;
  const std::string fit_table = format_batch_study(fitted);
  EXPECT_NE(fit_table.find("| best test accuracy | peak memory | B_noise |\n"
                           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"),
            std::string::npos)
      << fit_table;
  EXPECT_NE(fit_table.find("| 96 | 0.02 | 2 | 20 |"), std::string::npos) << fit_table;
  EXPECT_NE(fit_table.find("% | 3.00 MiB | 90 (se 5) |\n"), std::string::npos) << fit_table;
  EXPECT_NE(fit_table.find("% | — | 90 (se 5) |\n"), std::string::npos) << fit_table;
  EXPECT_NE(fit_table.find("Steps to target fit S_min (1 + B_crit / B) (McCandlish et al.) with S_min 10 and "
                           "B_crit 96 (3 batch sizes; the steps are whole epochs')"),
            std::string::npos)
      << fit_table;
  EXPECT_EQ(table.find("B_noise"), std::string::npos) << "no column where no run measured it";
  EXPECT_EQ(table.find("B_crit"), std::string::npos) << "no fit of fewer than three sizes";

  // Run again: the complete runs are taken as they are, nothing is trained.
  const auto size = fs::file_size(fs::path(small.dir) / "train.jsonl");
  started.clear();
  const BatchStudy again = run_batch_study(s);
  EXPECT_TRUE(again.rows[0].outcome.reused);
  EXPECT_TRUE(again.rows[1].outcome.reused);
  expect_same_epochs(again.rows[0].outcome.epochs, small.outcome.epochs);
  EXPECT_EQ(fs::file_size(fs::path(small.dir) / "train.jsonl"), size);
  EXPECT_EQ(format_batch_study(again), table);

  // More epochs: the size that reached the target is taken as it is, one that did not goes on.
  s.training.epochs = 3;
  const BatchStudy longer = run_batch_study(s);
  EXPECT_TRUE(longer.rows[0].outcome.reused);
  expect_same_epochs(longer.rows[0].outcome.epochs, small.outcome.epochs);
  EXPECT_EQ(fs::file_size(fs::path(small.dir) / "train.jsonl"), size);
  if (!large.outcome.target_epoch) {
    EXPECT_EQ(longer.rows[1].outcome.resumed_from_epoch, 2);
    EXPECT_EQ(longer.rows[1].outcome.epochs.size(), 3u);
  }

  // Another learning rate is another study: refused, the runs left as they were.
  s.training.optimizer.lr = 0.03;
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { run_batch_study(s); },
      {"batch-32/train.jsonl", "holds a complete training run of other options"}));
}

TEST_F(Training, ABatchStudyRefusesALaterRunOfOtherOptionsBeforeItTrainsAndTabulatesAStop) {
  BatchStudyOptions s;
  s.training = options("study_checked");
  s.training.limit_train = 64;
  s.training.epochs = 2;
  s.training.target_accuracy = 1.0;  // not reached: each run trains both epochs unless stopped
  s.batch_sizes = {32, 64};
  // Batch 64's directory holds a run of another learning rate than the study gives it.
  TrainingOptions other = s.training;
  other.batch_size = 64;
  other.epochs = 1;
  other.optimizer.lr = 0.05;
  other.out_dir = (*root_ / "study_checked" / "batch-64").string();
  train_model(other);
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { run_batch_study(s); }, {"batch-64/train.jsonl", "holds a complete training run of other options",
                                    "optimizer.lr was 0.05 there and is 0.02 here"}));
  EXPECT_FALSE(fs::exists(*root_ / "study_checked" / "batch-32")) << "batch 32 trained before the refusal";

  // Stopped in its first run after epoch 1: the table so far, the rest named; nothing written.
  s.training.out_dir = (*root_ / "study_stopped").string();
  s.training.stop_requested = [] { return true; };
  const BatchStudy stopped = run_batch_study(s);
  ASSERT_TRUE(stopped.stopped);
  ASSERT_EQ(stopped.rows.size(), 1u);
  EXPECT_TRUE(stopped.rows[0].outcome.stopped);
  EXPECT_EQ(stopped.not_started, (std::vector<int64_t>{64}));
  EXPECT_TRUE(stopped.json_path.empty());
  EXPECT_FALSE(fs::exists(*root_ / "study_stopped" / "time_to_accuracy.md"));
  const std::string table = format_batch_study(stopped);
  EXPECT_NE(table.find("per batch size, so far"), std::string::npos) << table;
  EXPECT_NE(table.find("| 32 | 0.02 | stopped after 1 |"), std::string::npos) << table;
  EXPECT_NE(table.find("Stopped in batch 32's run after epoch 1; not started: batch 64."), std::string::npos)
      << table;
  EXPECT_EQ(table.find("Fastest"), std::string::npos) << table;
}

}  // namespace
}  // namespace batchscope
