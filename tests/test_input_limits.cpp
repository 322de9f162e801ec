#include <gtest/gtest.h>

#include <string>

#include "lib/common/errors.h"
#include "lib/common/limits.h"
#include "lib/config/batch_spec.h"
#include "lib/config/config.h"
#include "models/flop_tally.h"
#include "models/registry.h"

using namespace batchscope;

namespace {

std::string config_error_of(const std::string& yaml) {
  try {
    parse_sweep_config(yaml, "exp.yaml");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(InputLimits, BatchSizesAboveTheLimitAreRefusedBeforeTheyAreExpanded) {
  EXPECT_NO_THROW(parse_batch_spec("1:" + std::to_string(limits::kMaxBatchSize) + ":x2"));
  for (const std::string spec :
       {"1:9223372036854775807", "16777217", "1,99999999", "1:99999999999999999999"}) {
    try {
      parse_batch_spec(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), std::to_string(limits::kMaxBatchSize))) << e.what();
    }
  }
  EXPECT_THROW(parse_batch_to_max("99999999:max"), std::invalid_argument);
}

TEST(InputLimits, EverySizeKeyNamesItsLineAndTheLargestValue) {
  const std::string head = "experiments:\n  - model: mnist_cnn\n";
  EXPECT_TRUE(contains(config_error_of(head + "    batch: [1, 20000000]\n"), "exp.yaml:3"));
  EXPECT_TRUE(
      contains(config_error_of(head + "    batch: {from: 1, to: 99999999999999999999}\n"), "too large"));
  EXPECT_TRUE(contains(config_error_of(head + "    batch: 1\n    classes: 99999999\n"), "exp.yaml:4"));
  EXPECT_TRUE(contains(config_error_of(head + "    batch: 1\n    steps: 2000000\n"), "1000000"));
  EXPECT_TRUE(contains(config_error_of(head + "    batch: 1\n    warmup: 2000000\n"), "1000000"));
  EXPECT_TRUE(contains(config_error_of(head + "    batch: 1\n    input: [1, 28, 2000000]\n"), "1048576"));
  const std::string sample =
      config_error_of("experiments:\n  - model: vgg16\n    batch: 1\n    input: [3, 50000, 50000]\n");
  EXPECT_TRUE(contains(sample, "exp.yaml:4") && contains(sample, "2147483648")) << sample;
  const std::string batch = config_error_of(
      "experiments:\n  - model: vgg16\n    input: [3, 5000, 5000]\n    batch: [1, 1000000]\n");
  EXPECT_TRUE(contains(batch, "exp.yaml:4") && contains(batch, "batch sizes up to 14660")) << batch;
}

TEST(InputLimits, TheSmallestTrainingBatchFollowsTheLastBatchNormPlane) {
  const models::ModelSpec& resnet50 = *models::find_model("resnet50");
  EXPECT_EQ(models::smallest_train_batch(resnet50, {3, 224, 224}, 1000), 1);
  EXPECT_EQ(models::smallest_train_batch(resnet50, {3, 32, 32}, 10), 2);  // layer4 runs at 1x1
  EXPECT_EQ(models::smallest_train_batch(resnet50, {3, 64, 64}, 10), 1);  // 2x2
  EXPECT_EQ(models::smallest_train_batch(*models::find_model("mobilenet_v2"), {3, 32, 32}, 10), 2);
  EXPECT_EQ(models::smallest_train_batch(*models::find_model("vgg16"), {3, 32, 32}, 10), 1);  // no batch norm
  EXPECT_EQ(models::smallest_train_batch(*models::find_model("lstm_lm"), {35}, 10000), 1);
}

TEST(InputLimits, ResolvedChecksNameTheLineOfTheValueOrTheOption) {
  const SweepConfig yaml = parse_sweep_config(
      "experiments:\n  - model: mnist_cnn\n    batch: 1\n  - model: mnist_cnn\n    name: b\n    batch: 2\n"
      "    precision: bf16\n",
      "exp.yaml");
  EXPECT_EQ(located_value(yaml.experiments[1], "precision", "p", "f"), "exp.yaml:7: p; f.");
  // A key the experiment did not set: the experiment's own line and name.
  EXPECT_EQ(located_value(yaml.experiments[1], "device", "p", ""), "exp.yaml:4: experiment b: p.");
  SweepOverrides o;
  o.model = "mnist_cnn";
  o.batch = "1";
  o.device = "cpu";
  const SweepConfig cli = sweep_from_overrides(o);
  EXPECT_EQ(located_value(cli.experiments[0], "device", "p", "f"), "command line: --device: p; f.");
}

TEST(InputLimits, ControlBytesInMessagesAreEscaped) {
  EXPECT_EQ(printable(std::string("a\0b\nc\x1b[0m\x7f", 10)), "a\\x00b\\x0ac\\x1b[0m\\x7f");
  EXPECT_EQ(printable("plain text, µ-cuDNN"), "plain text, µ-cuDNN");
}
