#include <gtest/gtest.h>

#include "lib/config/config.h"
#include "lib/sweep/sweep_plan.h"
#include "models/registry.h"

using namespace batchscope;

namespace {

SweepConfig plan_config() {
  return parse_sweep_config(R"(device: cuda
experiments:
  - {name: vgg_train, model: vgg16, input: [3, 32, 32], classes: 10, batch: "1:4", steps: 7, warmup: 2}
  - {name: vgg_infer, model: vgg16, input: [3, 32, 32], classes: 10, batch: [2, 8], phase: infer}
  - {name: to_max, model: mnist_cnn, batch: "1:max:x2"}
)",
                            "plan.yaml");
}

}  // namespace

TEST(SweepPlan, EveryExperimentWithItsBatchSizesAndFlopsPerStep) {
  const nlohmann::json plan = sweep_plan(plan_config());
  EXPECT_EQ(plan["source"], "plan.yaml");
  ASSERT_EQ(plan["experiments"].size(), 3u);
  const double forward = models::find_model("vgg16")->forward_flops({3, 32, 32}, 10);
  const nlohmann::json& train = plan["experiments"][0];
  EXPECT_EQ(train["name"], "vgg_train");
  EXPECT_EQ(train["batch"], nlohmann::json({1, 2, 3, 4}));
  EXPECT_EQ(train["steps"], 7);
  EXPECT_EQ(train["warmup"], 2);
  EXPECT_DOUBLE_EQ(train["forward_flops_per_sample"].get<double>(), forward);
  ASSERT_EQ(train["flops_per_step"].size(), 4u);
  // A training step counts the forward pass three times, less the first convolution's data gradient (3x3
  // from 3 channels to 64 at 32x32), as the sweep's records do.
  const double data_gradient = 2.0 * 3 * 9 * 64 * 32 * 32;
  EXPECT_DOUBLE_EQ(train["data_gradient_flops_per_sample"].get<double>(), data_gradient);
  EXPECT_DOUBLE_EQ(train["flops_per_step"][3].get<double>(), 4 * (3 * forward - data_gradient));
  EXPECT_FALSE(plan["experiments"][1].contains("data_gradient_flops_per_sample"));
  const nlohmann::json& infer = plan["experiments"][1];
  EXPECT_DOUBLE_EQ(infer["flops_per_step"][1].get<double>(), 8 * forward);
}

TEST(SweepPlan, SizesUpToTheMaximumAreLeftToTheSweep) {
  const nlohmann::json to_max = sweep_plan(plan_config())["experiments"][2];
  EXPECT_TRUE(to_max["batch"].empty());
  EXPECT_TRUE(to_max["flops_per_step"].empty());
  EXPECT_EQ(to_max["batch_to_max"]["from"], 1);
  EXPECT_DOUBLE_EQ(to_max["batch_to_max"]["factor"].get<double>(), 2.0);
}
