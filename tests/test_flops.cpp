#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "models/flop_tally.h"
#include "models/layer_plan.h"
#include "models/registry.h"
#include "models/zoo.h"

namespace bm = batchscope::models;
using Shape = std::vector<int64_t>;

TEST(FlopTally, ConvolutionWithBias) {
  bm::FlopTally tally({3, 8, 8});
  tally.conv2d(16, 3, 1, 1, 1, true);
  EXPECT_EQ(tally.shape(), (Shape{16, 8, 8}));
  // 16*8*8 outputs, each 3*3*3 multiply-adds plus the bias.
  EXPECT_EQ(tally.total(), 16 * 8 * 8 * (2 * 3 * 3 * 3 + 1));
}

TEST(FlopTally, ConvolutionWithoutBias) {
  bm::FlopTally tally({3, 8, 8});
  tally.conv2d(16, 3, 1, 1, 1, false);
  EXPECT_EQ(tally.total(), 16 * 8 * 8 * 2 * 3 * 3 * 3);
}

TEST(FlopTally, StrideAndPaddingShapeTheOutput) {
  bm::FlopTally tally({3, 224, 224});
  tally.conv2d(64, 7, 2, 3, 1, false);
  EXPECT_EQ(tally.shape(), (Shape{64, 112, 112}));
  bm::FlopTally unpadded({1, 7, 7});
  unpadded.conv2d(1, 3, 2, 0, 1, false);
  EXPECT_EQ(unpadded.shape(), (Shape{1, 3, 3}));
}

TEST(FlopTally, DepthwiseConvolutionSeesOneChannelPerOutput) {
  bm::FlopTally tally({32, 16, 16});
  tally.conv2d(32, 3, 1, 1, 32, false);
  EXPECT_EQ(tally.shape(), (Shape{32, 16, 16}));
  EXPECT_EQ(tally.total(), 32 * 16 * 16 * 2 * 1 * 3 * 3);
}

TEST(FlopTally, GroupedConvolutionDividesInputChannels) {
  bm::FlopTally tally({8, 4, 4});
  tally.conv2d(16, 1, 1, 0, 4, true);
  // Each output sees 8/4 = 2 input channels.
  EXPECT_EQ(tally.total(), 16 * 4 * 4 * (2 * 2 + 1));
}

TEST(FlopTally, Linear) {
  bm::FlopTally with_bias({100});
  with_bias.linear(10, true);
  EXPECT_EQ(with_bias.shape(), (Shape{10}));
  EXPECT_EQ(with_bias.total(), 2 * 100 * 10 + 10);
  bm::FlopTally without_bias({100});
  without_bias.linear(10, false);
  EXPECT_EQ(without_bias.total(), 2 * 100 * 10);
}

TEST(FlopTally, MaxPoolComparesWithinEachWindow) {
  bm::FlopTally tally({4, 8, 8});
  tally.maxpool(2, 2);
  EXPECT_EQ(tally.shape(), (Shape{4, 4, 4}));
  EXPECT_EQ(tally.total(), 4 * 4 * 4 * (2 * 2 - 1));

  bm::FlopTally padded({64, 112, 112});
  padded.maxpool(3, 2, 1);
  EXPECT_EQ(padded.shape(), (Shape{64, 56, 56}));
  EXPECT_EQ(padded.total(), 64 * 56 * 56 * (3 * 3 - 1));
}

TEST(FlopTally, AdaptiveAveragePoolAddsInputsAndDividesOutputs) {
  bm::FlopTally tally({512, 14, 14});
  tally.adaptive_avgpool(7, 7);
  EXPECT_EQ(tally.shape(), (Shape{512, 7, 7}));
  EXPECT_EQ(tally.total(), 512 * 14 * 14 + 512 * 7 * 7);
}

TEST(FlopTally, ElementWiseLayers) {
  bm::FlopTally tally({2, 3, 5});
  tally.batchnorm();
  EXPECT_EQ(tally.total(), 2 * 30);
  tally.relu();
  EXPECT_EQ(tally.total(), 3 * 30);
  tally.add();
  EXPECT_EQ(tally.total(), 4 * 30);
  tally.dropout();
  tally.flatten();
  EXPECT_EQ(tally.total(), 4 * 30);
  EXPECT_EQ(tally.shape(), (Shape{30}));
}

TEST(FlopTally, WindowLargerThanActivationThrows) {
  bm::FlopTally conv({3, 2, 2});
  EXPECT_THROW(conv.conv2d(8, 3, 1, 0), std::invalid_argument);
  bm::FlopTally pool({512, 1, 1});
  EXPECT_THROW(pool.maxpool(2, 2), std::invalid_argument);
  // Padding can make a window fit.
  bm::FlopTally padded({3, 2, 2});
  EXPECT_NO_THROW(padded.conv2d(8, 3, 1, 1));
  EXPECT_THROW(bm::FlopTally({3, 0, 4}), std::invalid_argument);
}

TEST(LayerPlan, ResidualStackCountsBothBranchesAndTheAdd) {
  const bm::Layer block = bm::residual({bm::conv(8, 3, 2, 1, 1, false), bm::batch_norm()},
                                       {bm::conv(8, 1, 2, 0, 1, false)}, true);
  bm::FlopTally tally({4, 8, 8});
  bm::tally_layer(tally, block);
  EXPECT_EQ(tally.shape(), (Shape{8, 4, 4}));
  const int64_t body = 8 * 4 * 4 * (2 * 4 * 3 * 3) + 2 * 8 * 4 * 4;
  const int64_t shortcut = 8 * 4 * 4 * (2 * 4);
  const int64_t add_then_relu = 2 * 8 * 4 * 4;
  EXPECT_EQ(tally.total(), body + shortcut + add_then_relu);
}

TEST(ModelFlops, MnistCnnByHand) {
  const int64_t conv1 = 32 * 26 * 26 * (2 * 1 * 3 * 3 + 1);
  const int64_t relu1 = 32 * 26 * 26;
  const int64_t conv2 = 64 * 24 * 24 * (2 * 32 * 3 * 3 + 1);
  const int64_t relu2 = 64 * 24 * 24;
  const int64_t pool = 64 * 12 * 12 * (2 * 2 - 1);
  const int64_t fc1 = 2 * (64 * 12 * 12) * 128 + 128;
  const int64_t relu3 = 128;
  const int64_t fc2 = 2 * 128 * 10 + 10;
  const int64_t expected = conv1 + relu1 + conv2 + relu2 + pool + fc1 + relu3 + fc2;
  EXPECT_EQ(expected, 24129802);
  EXPECT_EQ(bm::find_model("mnist_cnn")->forward_flops({1, 28, 28}, 10), static_cast<double>(expected));
}

TEST(ModelFlops, RegistryCountsThePlan) {
  EXPECT_EQ(bm::find_model("resnet50")->forward_flops({3, 64, 96}, 7),
            static_cast<double>(bm::count_flops(bm::resnet_plan(50, 7), {3, 64, 96})));
}

// Published multiply-add counts at 3x224x224, doubled; the element-wise layers add well under 1%.
TEST(ModelFlops, ImageNetModelsMatchPublishedCounts) {
  struct Case {
    const char* name;
    double flops;
    double tolerance;
  };
  const Case cases[] = {
      {"vgg16", 2 * 15.47e9, 0.01},
      {"vgg19", 2 * 19.63e9, 0.01},
      {"resnet50", 2 * 4.1e9, 0.01},
      {"resnet18", 2 * 1.814e9, 0.01},  // torchvision's 1.81 GMACs
      {"alexnet", 2 * 0.714e9, 0.01},   // torchvision's 0.71 GMACs
      // Its thin layers make batch norm and ReLU6 a larger share.
      {"mobilenet_v2", 2 * 0.3e9, 0.06},
      {"mobilenet", 2 * 0.569e9, 0.03},
  };
  for (const Case& c : cases) {
    const double flops = bm::find_model(c.name)->forward_flops({3, 224, 224}, 1000);
    EXPECT_NEAR(flops, c.flops, c.tolerance * c.flops) << c.name;
  }
}

// A training step never computes the data's gradient through the first layer: the GEMM of the first
// convolution where it takes the image itself, nothing where the data enters through an embedding.
TEST(ModelFlops, TheDataGradientIsTheFirstLayersGemmWhereItTakesTheData) {
  const auto skipped = [](const char* name, const bm::SampleShape& input, int64_t classes) {
    return bm::data_gradient_flops(*bm::find_model(name), input, classes);
  };
  // 3x3 from 3 channels to 64 at 224x224; ResNet's 7x7 stride 2 to 112x112; the MNIST CNN's 3x3 from 1 to
  // 32 at 26x26; Deep Speech 2's 41x11 from 1 to 32 channels, at 81 bins x 250 frames of 161 x 500.
  EXPECT_EQ(skipped("vgg16", {3, 224, 224}, 1000), 2.0 * 3 * 9 * 64 * 224 * 224);
  EXPECT_EQ(skipped("resnet50", {3, 224, 224}, 1000), 2.0 * 3 * 49 * 64 * 112 * 112);
  EXPECT_EQ(skipped("mnist_cnn", {1, 28, 28}, 10), 2.0 * 9 * 32 * 26 * 26);
  EXPECT_EQ(skipped("deepspeech2", {1, 161, 500}, 29), 2.0 * 41 * 11 * 32 * 81 * 250);
  EXPECT_EQ(skipped("lstm_lm", {35}, 10000), 0.0);
  EXPECT_EQ(skipped("transformer", {128}, 37000), 0.0);
  // A small share of a training step's 3x the forward: AlexNet's is the largest of the zoo.
  const double alexnet = bm::find_model("alexnet")->forward_flops({3, 224, 224}, 1000);
  EXPECT_NEAR(skipped("alexnet", {3, 224, 224}, 1000) / (3 * alexnet), 0.034, 0.002);
}

TEST(ModelFlops, FlopsFollowTheInputAndClasses) {
  const bm::ModelSpec* vgg = bm::find_model("vgg16");
  EXPECT_LT(vgg->forward_flops({3, 32, 32}, 1000), vgg->forward_flops({3, 224, 224}, 1000));
  // Only the last layer changes with the class count: 2*4096 + 1 per class.
  EXPECT_EQ(vgg->forward_flops({3, 224, 224}, 1000) - vgg->forward_flops({3, 224, 224}, 10),
            (2 * 4096 + 1) * 990.0);
}
