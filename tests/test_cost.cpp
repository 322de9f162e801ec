// What a batch size costs: prices from the command line or a file, $ per million samples and per
// epoch, the cheapest size, and devices set against each other by cost.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/cifar.h"
#include "data/idx.h"
#include "lib/analysis/analyzer.h"
#include "lib/analysis/cost.h"
#include "lib/analysis/report/analysis_json.h"
#include "lib/analysis/report/report_markdown.h"
#include "tests/test_support.h"

using namespace batchscope;
namespace fs = std::filesystem;

namespace {

std::string write(const testing_support::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir / name;
  std::ofstream(path) << text;
  return path;
}

// A log of one GPU (name and step time per batch size) with tight steps.
std::string gpu_log(const testing_support::TempDir& dir, const std::string& gpu, double ms_per_sample,
                    const std::string& data = "synthetic", const std::string& phase = "train") {
  const std::string path = dir / (gpu + ".jsonl");
  std::ofstream out(path);
  const Json config = {{"name", "g"},          {"model", "vgg16"}, {"phase", phase}, {"precision", "fp32"},
                       {"input", {3, 32, 32}}, {"classes", 10},    {"data", data}};
  out << Json{{"type", "run"},
              {"run_id", gpu},
              {"libtorch_version", "2.6"},
              {"gpus", {{{"index", 0}, {"name", gpu}}}},
              {"config", {{"experiments", {config}}}}}
             .dump()
      << "\n";
  for (int64_t b : {1, 2, 4, 8, 16, 32}) {
    const BatchKey key{"g", "vgg16", phase, "fp32", "cuda:0", "", b, std::nullopt};
    const double m = 2.0 + ms_per_sample * static_cast<double>(b);
    for (int i = 0; i < 8; ++i)
      out << to_json(SweepRecord(StepRecord{key, i, m, std::nullopt, std::nullopt})).dump() << "\n";
  }
  return path;
}

}  // namespace

TEST(Cost, DollarsPerMillionSamplesAndPerEpochByHand) {
  // $3.60 per hour is $0.001 per second; 100 ms for 50 samples is 2 ms a sample: $2 per million samples.
  EXPECT_DOUBLE_EQ(usd_per_million_samples(3.6, 100.0, 50), 2.0);
  // 60000 samples at 64 a step: 938 steps of 100 ms, 93.8 s at $0.001/s.
  EXPECT_NEAR(usd_per_epoch(3.6, 100.0, 64, 60000), 0.0938, 1e-12);
  EXPECT_EQ(known_epoch_samples("mnist"), 60000);
  EXPECT_EQ(known_epoch_samples("cifar100"), 50000);
  EXPECT_FALSE(known_epoch_samples("synthetic").has_value());
}

// A directory's epoch is the training images its files hold: an IDX labels file's count, CIFAR's records
// by the files' sizes; none where the files are not there.
TEST(Cost, ADatasetDirectorysEpochIsTheTrainingImagesItsFilesHold) {
  const testing_support::TempDir dir;
  const fs::path digits = dir.path() / "digits";
  fs::create_directories(digits);
  for (const auto& [prefix, count] : {std::pair{"train", 300}, std::pair{"t10k", 40}}) {
    data::IdxArray images{{count, 28, 28}, std::vector<uint8_t>(static_cast<std::size_t>(count) * 784, 0)};
    data::IdxArray labels{{count}, std::vector<uint8_t>(static_cast<std::size_t>(count), 1)};
    data::write_idx((digits / (std::string(prefix) + "-images-idx3-ubyte")).string(), images, false);
    data::write_idx((digits / (std::string(prefix) + "-labels-idx1-ubyte.gz")).string(), labels, true);
  }
  EXPECT_EQ(known_epoch_samples(digits.string()), 300);
  const fs::path colours = dir.path() / "colours";
  fs::create_directories(colours);
  for (const auto& [name, count] : {std::pair{"train.bin", 250}, std::pair{"test.bin", 10}}) {
    data::CifarRecords records;
    records.count = count;
    records.labels.assign(static_cast<std::size_t>(count), 3);
    records.pixels.assign(static_cast<std::size_t>(count) * data::kCifarImageBytes, 0);
    data::write_cifar((colours / name).string(), records, data::CifarFile{2, 100});
  }
  EXPECT_EQ(known_epoch_samples(colours.string()), 250);
  EXPECT_FALSE(known_epoch_samples((dir.path() / "gone").string()).has_value());
  fs::remove(digits / "train-labels-idx1-ubyte.gz");
  EXPECT_FALSE(known_epoch_samples(digits.string()).has_value());
}

TEST(Cost, PricesFileMatchesExactlyBeforeAPartAndIgnoresCase) {
  const testing_support::TempDir dir;
  const PriceList prices =
      read_prices(write(dir, "p.yaml", "prices:\n  h100: 2.0\n  NVIDIA H100 80GB HBM3: 2.5\n  a100: 1.2\n"));
  ASSERT_EQ(prices.entries.size(), 3u);
  const auto exact = price_for(prices, {"nvidia h100 80gb hbm3"});
  ASSERT_TRUE(exact.has_value());
  EXPECT_DOUBLE_EQ(exact->usd_per_hour, 2.5);
  EXPECT_NE(exact->from.find("p.yaml:3"), std::string::npos) << exact->from;
  const auto part = price_for(prices, {"NVIDIA A100-SXM4-40GB"});
  ASSERT_TRUE(part.has_value());
  EXPECT_DOUBLE_EQ(part->usd_per_hour, 1.2);
  EXPECT_FALSE(price_for(prices, {"Tesla T4"}).has_value());
  PriceList with_fallback = prices;
  with_fallback.fallback = 0.35;
  EXPECT_EQ(price_for(with_fallback, {"Tesla T4"})->from, "--price");
  // Two keys that are both parts of one name, and neither the whole of it: ambiguous.
  const PriceList two = read_prices(write(dir, "two.yaml", "prices:\n  H100: 2.0\n  HBM3: 2.5\n"));
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { price_for(two, {"NVIDIA H100 80GB HBM3"}); },
      {"two.yaml:3",
       "\"H100\" (line 2) matches the device NVIDIA H100 80GB HBM3 and \"HBM3\" matches it too"}));
  // A key matches a whole word of the name, not part of one: L4 is not an L40S, A100 not an A1000.
  const PriceList words = read_prices(write(dir, "words.yaml", "prices:\n  L4: 0.8\n  A100: 1.2\n"));
  EXPECT_FALSE(price_for(words, {"NVIDIA L40S"}).has_value());
  EXPECT_FALSE(price_for(words, {"NVIDIA RTX A1000"}).has_value());
  EXPECT_DOUBLE_EQ(price_for(words, {"NVIDIA L4"})->usd_per_hour, 0.8);
  // Two keys that each match one of a group's names exactly (the device and its CPU model): refused, naming
  // what each matched, not the last one taken silently.
  const PriceList both = read_prices(write(dir, "both.yaml", "prices:\n  cpu: 0.1\n  AMD EPYC 7B13: 0.3\n"));
  EXPECT_TRUE(testing_support::refuses_with(
      [&] {
        price_for(both, {"cpu", "AMD EPYC 7B13"});
      },
      {"both.yaml:3",
       "\"cpu\" (line 2) matches the device cpu and "
       "\"AMD EPYC 7B13\" matches AMD EPYC 7B13"}));
}

TEST(Cost, BadPricesFilesAreRefusedWithTheirLine) {
  const testing_support::TempDir dir;
  EXPECT_TRUE(testing_support::refuses_with([&] { read_prices(dir / "missing.yaml"); },
                                            {"missing.yaml", "cannot be read"}));
  EXPECT_TRUE(testing_support::refuses_with([&] { read_prices(write(dir, "a.yaml", "h100: 2\n")); },
                                            {"a.yaml:1", "no top-level prices: map"}));
  EXPECT_TRUE(
      testing_support::refuses_with([&] { read_prices(write(dir, "b.yaml", "prices:\n  h100: cheap\n")); },
                                    {"b.yaml:2", "\"h100\" is not a number"}));
  EXPECT_TRUE(testing_support::refuses_with(
      [&] { read_prices(write(dir, "c.yaml", "prices:\n  a: 1\n  h100: -2\n")); },
      {"c.yaml:3", "not above 0"}));
  EXPECT_TRUE(testing_support::refuses_with([&] { read_prices(write(dir, "d.yaml", "prices: [1, 2\n")); },
                                            {"d.yaml", "is not YAML"}));
}

// Two GPUs: the faster one costs more per hour but less per sample; analyze says so.
TEST(Cost, AnalyzeNamesTheCheapestBatchAndComparesDevicesByCost) {
  const testing_support::TempDir dir;
  AnalyzeOptions options;
  options.prices = read_prices(write(dir, "p.yaml", "prices:\n  fast gpu: 4.0\n"));
  options.prices.fallback = 1.0;
  options.epoch_samples = 1000;
  const Analysis a = analyze_logs({gpu_log(dir, "fast gpu", 0.5), gpu_log(dir, "slow gpu", 4.0)}, options);
  ASSERT_EQ(a.groups.size(), 2u);
  for (const GroupAnalysis& g : a.groups) {
    ASSERT_TRUE(g.cost.has_value()) << g.label;
    ASSERT_TRUE(g.cost->cheapest.has_value());
    EXPECT_EQ(g.cost->cheapest->batch_size, 32);  // per sample the fixed 2 ms shrinks with the batch
  }
  const GroupAnalysis& fast = a.groups[0].label.find("fast") != std::string::npos ? a.groups[0] : a.groups[1];
  const GroupAnalysis& slow = &fast == &a.groups[0] ? a.groups[1] : a.groups[0];
  // fast: 2 + 16 = 18 ms for 32 samples at $4/h; slow: 2 + 128 = 130 ms at $1/h.
  EXPECT_NEAR(fast.cost->cheapest->usd_per_million_samples, 4.0 / 3600 * 0.018 / 32 * 1e6, 1e-9);
  EXPECT_NEAR(slow.cost->cheapest->usd_per_million_samples, 1.0 / 3600 * 0.130 / 32 * 1e6, 1e-9);
  EXPECT_NEAR(*fast.cost->cheapest->usd_per_epoch, 4.0 / 3600 * 0.018 * 32, 1e-12);
  EXPECT_EQ(fast.cost->price_from, dir / "p.yaml" + ":2 (fast gpu)");
  EXPECT_EQ(slow.cost->price_from, "--price");
  std::ostringstream report;
  write_report(report, a, PlotOutcome{}, "plots");
  const std::string text = report.str();
  EXPECT_NE(text.find("## What it costs"), std::string::npos);
  // The cheapest group comes first in the table, and the other is priced against it.
  EXPECT_LT(text.find("| vgg16 train fp32 · fast gpu"), text.find("| vgg16 train fp32 · slow gpu"));
  EXPECT_NE(text.find("| × cheapest of the same work |"), std::string::npos);
  EXPECT_NE(text.find("cheapest: batch 32"), std::string::npos);
  // The terminal summary names each group's cheapest size too.
  std::ostringstream terminal;
  write_terminal_summary(terminal, a);
  EXPECT_NE(terminal.str().find("  cheapest: batch 32, $" +
                                significant(slow.cost->cheapest->usd_per_million_samples, 3) +
                                " per million samples at $1.00/h"),
            std::string::npos)
      << terminal.str();
  const Json j = analysis_to_json(a, options);
  EXPECT_EQ(j["groups"][0]["cost"]["cheapest"]["batch_size"], 32);
}

TEST(Cost, AGroupWithoutAPriceIsNamedAndMnistEpochsAreKnown) {
  const testing_support::TempDir dir;
  AnalyzeOptions options;
  options.prices = read_prices(write(dir, "p.yaml", "prices:\n  other: 2.0\n  mnist box: 1.0\n"));
  const Analysis a =
      analyze_logs({gpu_log(dir, "lonely gpu", 1.0), gpu_log(dir, "mnist box", 1.0, "mnist")}, options);
  ASSERT_EQ(a.unpriced.size(), 1u);
  EXPECT_NE(a.unpriced[0].find("lonely gpu"), std::string::npos);
  for (const GroupAnalysis& g : a.groups) {
    if (!g.cost) continue;
    EXPECT_EQ(g.cost->epoch_samples, 60000);
  }
}

// With a noise scale, each training group's time to an accuracy: steps S_min (1 + B_noise / B), each of the
// median step time. Steps of 2 + 0.5 B ms and B_noise 16 give (2 + 0.5 B)(1 + 16 / B), least at B = 8
// (18 units), and the fastest in samples/s, 32, takes 27: 1.5 times as long.
TEST(Cost, ANoiseScaleGivesEachTrainingGroupsTimeToAnAccuracy) {
  const testing_support::TempDir dir;
  AnalyzeOptions options;
  options.noise_scale = GivenNoiseScale{16, "--noise-scale"};
  const Analysis a = analyze_logs({gpu_log(dir, "a gpu", 0.5)}, options);
  ASSERT_EQ(a.groups.size(), 1u);
  const GroupAnalysis& g = a.groups[0];
  ASSERT_TRUE(g.time_to_accuracy && g.time_to_accuracy->best);
  EXPECT_EQ(g.time_to_accuracy->best->batch_size, 8);
  EXPECT_DOUBLE_EQ(g.time_to_accuracy->best->relative_time, 1);
  EXPECT_DOUBLE_EQ(g.time_to_accuracy->best->steps_factor, 3);
  ASSERT_EQ(g.time_to_accuracy->points.size(), 6u);
  EXPECT_NEAR(g.time_to_accuracy->points.back().relative_time, 27.0 / 18, 1e-12);
  EXPECT_NEAR(g.time_to_accuracy->points.front().relative_time, 42.5 / 18, 1e-12);
  ASSERT_TRUE(g.fastest);
  EXPECT_EQ(g.fastest->batch_size, 32);
  std::ostringstream report, terminal;
  write_report(report, a, PlotOutcome{}, "plots");
  EXPECT_NE(
      report.str().find("- least time to an accuracy, with B_noise 16 (--noise-scale): batch 8, 3.00× the "
                        "fewest steps (S_min (1 + B_noise / B), McCandlish et al.); the fastest in "
                        "samples/s, batch 32, takes 1.50× as long"),
      std::string::npos)
      << report.str();
  write_terminal_summary(terminal, a);
  EXPECT_NE(terminal.str().find("  least time to an accuracy (B_noise 16): batch 8; the fastest"),
            std::string::npos)
      << terminal.str();
  const Json j = analysis_to_json(a, options);
  EXPECT_EQ(j["groups"][0]["time_to_accuracy"]["best"], 8);
  EXPECT_EQ(j["groups"][0]["time_to_accuracy"]["b_noise"], 16);

  // Without one, nothing of it; inference is not trained to an accuracy, and says so.
  EXPECT_FALSE(analyze_logs({gpu_log(dir, "a gpu", 0.5)}, AnalyzeOptions{}).groups[0].time_to_accuracy);
  const Analysis infer = analyze_logs({gpu_log(dir, "b gpu", 0.5, "synthetic", "infer")}, options);
  EXPECT_FALSE(infer.groups[0].time_to_accuracy);
  ASSERT_FALSE(infer.warnings.empty());
  EXPECT_NE(infer.warnings.back().find("no group of these logs trains"), std::string::npos);
}
