#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/flop_tally.h"
#include "models/layer_plan.h"
#include "models/planned_network.h"
#include "models/registry.h"
#include "models/zoo.h"
#include "tests/test_support.h"

namespace bm = batchscope::models;
using Shape = std::vector<int64_t>;

using batchscope::testing_support::invalid_argument_message;

namespace {

struct ZooCase {
  const char* name;
  bm::Layer (*plan)(int64_t classes);
  int64_t reference_parameters;  // at the default input and class count
  int64_t head_inputs;           // features into the last linear layer
  Shape small_input;
};

const std::vector<ZooCase>& zoo_cases() {
  static const std::vector<ZooCase> cases = {
      {"vgg16", [](int64_t classes) { return bm::vgg_plan(16, classes); }, 138357544, 4096, {3, 32, 32}},
      {"vgg19", [](int64_t classes) { return bm::vgg_plan(19, classes); }, 143667240, 4096, {3, 32, 32}},
      {"resnet50", [](int64_t classes) { return bm::resnet_plan(50, classes); }, 25557032, 2048, {3, 32, 32}},
      {"resnet18", [](int64_t classes) { return bm::resnet_plan(18, classes); }, 11689512, 512, {3, 32, 32}},
      {"alexnet", bm::alexnet_plan, 61100840, 4096, {3, 64, 64}},
      {"mobilenet", bm::mobilenet_v1_plan, 4231976, 1024, {3, 32, 32}},
      {"mobilenet_v2", bm::mobilenet_v2_plan, 3504872, 1280, {3, 32, 32}},
      {"mnist_cnn", bm::mnist_cnn_plan, 1199882, 128, {1, 28, 28}},
  };
  return cases;
}

int64_t parameters_of(const std::string& name, const Shape& input, int64_t classes) {
  return bm::count_parameters(*bm::find_model(name)->build(input, classes));
}

}  // namespace

TEST(Registry, FindsEveryModel) {
  for (const ZooCase& c : zoo_cases()) {
    const bm::ModelSpec* spec = bm::find_model(c.name);
    ASSERT_NE(spec, nullptr) << c.name;
    EXPECT_EQ(spec->name, c.name);
    EXPECT_FALSE(spec->summary.empty());
    EXPECT_EQ(spec->input_kind, bm::InputKind::Image);
    EXPECT_EQ(spec->reference_parameters, c.reference_parameters) << c.name;
  }
  // The image zoo plus the four sequence models (tests/test_sequence_models.cpp).
  EXPECT_EQ(bm::all_models().size(), zoo_cases().size() + 4);
}

TEST(Registry, UnknownNameIsNull) {
  EXPECT_EQ(bm::find_model("resnet51"), nullptr);
  EXPECT_EQ(bm::find_model(""), nullptr);
  EXPECT_EQ(bm::find_model("VGG16"), nullptr);
}

TEST(Registry, KnownNamesListsEveryModel) {
  EXPECT_EQ(
      bm::known_model_names(),
      "vgg16, vgg19, resnet50, resnet18, alexnet, mobilenet, mobilenet_v2, mnist_cnn, lstm_lm, transformer, "
      "deepspeech2, deepspeech2_gru");
}

TEST(Registry, AnUnknownNameIsAnsweredWithTheNearestKnownOne) {
  const std::string list = "known models: " + bm::known_model_names();
  EXPECT_EQ(bm::unknown_model_fix("vgg17"),
            "did you mean vgg16 (" + list + "), or the path of a TorchScript file");
  EXPECT_EQ(bm::unknown_model_fix("resnet51"),
            "did you mean resnet50 (" + list + "), or the path of a TorchScript file");
  EXPECT_EQ(bm::unknown_model_fix("VGG16"),
            "did you mean vgg16 (" + list + "), or the path of a TorchScript file");
  // Three edits or more from every name: the list alone.
  EXPECT_EQ(bm::unknown_model_fix("bert_large"),
            "use one of the " + list + ", or the path of a TorchScript file");
}

TEST(Registry, DefaultInputsAndClasses) {
  for (const ZooCase& c : zoo_cases()) {
    const bm::ModelSpec* spec = bm::find_model(c.name);
    const bool mnist = std::string(c.name) == "mnist_cnn";
    EXPECT_EQ(spec->default_input, mnist ? Shape({1, 28, 28}) : Shape({3, 224, 224})) << c.name;
    EXPECT_EQ(spec->default_classes, mnist ? 10 : 1000) << c.name;
  }
}

TEST(ParameterCounts, MatchTheReferenceModels) {
  for (const ZooCase& c : zoo_cases()) {
    const bm::ModelSpec* spec = bm::find_model(c.name);
    EXPECT_EQ(parameters_of(c.name, spec->default_input, spec->default_classes), c.reference_parameters)
        << c.name;
  }
}

// Built small, with 7 classes: the head shrinks by (inputs + bias) per class dropped, a training step's
// forward and backward run, and every stage's output has the shape the tally predicts for the same plan.
TEST(ZooModels, SmallInputsTrainAndAgreeWithTheTally) {
  constexpr int64_t kClasses = 7;
  constexpr int64_t kBatch = 2;
  for (const ZooCase& c : zoo_cases()) {
    SCOPED_TRACE(c.name);
    const bm::ModelSpec* spec = bm::find_model(c.name);
    const std::shared_ptr<bm::Network> network = spec->build(c.small_input, kClasses);
    EXPECT_EQ(bm::count_parameters(*network),
              c.reference_parameters - (c.head_inputs + 1) * (spec->default_classes - kClasses));

    Shape batch_shape = {kBatch};
    batch_shape.insert(batch_shape.end(), c.small_input.begin(), c.small_input.end());
    const torch::Tensor input = torch::randn(batch_shape);
    const torch::Tensor output = network->forward(input);
    EXPECT_EQ(output.sizes(), (Shape{kBatch, kClasses}));
    // In-place activations must leave autograd what it needs.
    output.sum().backward();

    torch::NoGradGuard no_grad;
    const auto planned = std::dynamic_pointer_cast<bm::PlannedNetwork>(network);
    ASSERT_NE(planned, nullptr);
    const std::vector<Shape> stages = planned->stage_shapes(input);
    const bm::Layer plan = c.plan(kClasses);
    ASSERT_EQ(stages.size(), plan.children.size());
    bm::FlopTally tally(c.small_input);
    for (size_t i = 0; i < stages.size(); ++i) {
      bm::tally_layer(tally, plan.children[i]);
      EXPECT_EQ(tally.shape(), stages[i]) << "stage " << plan.children[i].name;
    }
  }
}

TEST(ParameterCounts, FollowInputChannels) {
  // Only the first convolution sees the input channels: 3x3 weights per channel and output.
  EXPECT_EQ(parameters_of("vgg16", {1, 32, 32}, 1000), 138357544 - 2 * 3 * 3 * 64);
  // The first linear layer follows the spatial size: 64 channels of 14x14 after the pool.
  const int64_t conv1 = 3 * 3 * 3 * 32 + 32;
  const int64_t conv2 = 32 * 3 * 3 * 64 + 64;
  const int64_t fc1 = 64 * 14 * 14 * 128 + 128;
  const int64_t fc2 = 128 * 10 + 10;
  EXPECT_EQ(parameters_of("mnist_cnn", {3, 32, 32}, 10), conv1 + conv2 + fc1 + fc2);
}

TEST(ParameterCounts, TrainableOnlySkipsFrozenParameters) {
  const std::shared_ptr<bm::Network> network = bm::find_model("mnist_cnn")->build({1, 28, 28}, 10);
  for (auto& parameter : network->named_parameters()) {
    if (parameter.key().rfind("conv1.", 0) == 0) parameter.value().set_requires_grad(false);
  }
  EXPECT_EQ(bm::count_parameters(*network, true), 1199882 - (3 * 3 * 32 + 32));
  EXPECT_EQ(bm::count_parameters(*network, false), 1199882);
}

TEST(ParameterNames, FollowTheReferenceLayouts) {
  const auto has = [](const std::shared_ptr<bm::Network>& network, const std::string& name) {
    return network->named_parameters().contains(name);
  };
  const auto resnet = bm::find_model("resnet50")->build({3, 32, 32}, 10);
  EXPECT_TRUE(has(resnet, "conv1.weight"));
  EXPECT_TRUE(has(resnet, "layer1.0.conv2.weight"));
  EXPECT_TRUE(has(resnet, "layer2.0.downsample.0.weight"));
  EXPECT_TRUE(has(resnet, "fc.bias"));
  const auto mobilenet_v2 = bm::find_model("mobilenet_v2")->build({3, 32, 32}, 10);
  EXPECT_TRUE(has(mobilenet_v2, "features.0.0.weight"));
  EXPECT_TRUE(has(mobilenet_v2, "features.1.conv.0.0.weight"));
  EXPECT_TRUE(mobilenet_v2->named_buffers().contains("features.2.conv.3.running_mean"));
  EXPECT_TRUE(has(mobilenet_v2, "classifier.1.weight"));
  const auto mnist = bm::find_model("mnist_cnn")->build({1, 28, 28}, 10);
  EXPECT_TRUE(has(mnist, "fc2.weight"));
}

TEST(InputChecks, TooSmallInputsAreRefusedWithTheSmallestSize) {
  const bm::ModelSpec* mnist = bm::find_model("mnist_cnn");
  const std::string message = invalid_argument_message([&] { mnist->build({1, 4, 4}, 10); });
  EXPECT_NE(message.find("mnist_cnn"), std::string::npos) << message;
  EXPECT_NE(message.find("6x6"), std::string::npos) << message;
  EXPECT_THROW(mnist->forward_flops({1, 5, 28}, 10), std::invalid_argument);
  EXPECT_NO_THROW(mnist->forward_flops({1, 6, 6}, 10));

  // Five 2x2 pools halve 16 pixels to nothing; the adaptive pool comes too late to help.
  const bm::ModelSpec* vgg = bm::find_model("vgg16");
  const std::string vgg_message = invalid_argument_message([&] { vgg->forward_flops({3, 16, 16}, 1000); });
  EXPECT_NE(vgg_message.find("32x32"), std::string::npos) << vgg_message;
  EXPECT_THROW(vgg->build({3, 16, 16}, 1000), std::invalid_argument);
  EXPECT_NO_THROW(vgg->forward_flops({3, 32, 32}, 1000));
}

TEST(InputChecks, MalformedRequestsAreRefused) {
  for (const bm::ModelSpec& spec : bm::all_models()) {
    SCOPED_TRACE(spec.name);
    EXPECT_THROW(spec.forward_flops({28, 28}, 10), std::invalid_argument);
    EXPECT_THROW(spec.forward_flops({1, 3, 28, 28}, 10), std::invalid_argument);
    EXPECT_THROW(spec.forward_flops({3, 0, 224}, 10), std::invalid_argument);
    EXPECT_THROW(spec.forward_flops(spec.default_input, 0), std::invalid_argument);
    EXPECT_THROW(spec.build({28, 28}, 10), std::invalid_argument);
  }
}

TEST(InputChecks, StridedModelsAcceptAnyPositiveSize) {
  // Padded stride-2 windows never leave nothing, so these architectures take even a single pixel.
  for (const char* name : {"resnet50", "mobilenet", "mobilenet_v2"}) {
    EXPECT_NO_THROW(bm::find_model(name)->forward_flops({3, 1, 1}, 10)) << name;
  }
}

// The weights start as the reference models' do: torchvision's VGG, ResNet and MobileNetV2 draw their
// convolutions kaiming-normal over the fan-out (std sqrt(2 / (out x k x k))) with zero biases, VGG's and
// MobileNetV2's linear layers N(0, 0.01) with zero biases; AlexNet and the MNIST CNN keep LibTorch's own
// layer resets (uniform, biases not zero), as their references do.
TEST(ModelInit, TheReferenceModelsDistributions) {
  torch::manual_seed(0);
  const auto parameter = [](const bm::Network& network, const std::string& name) {
    for (const auto& p : network.named_parameters()) {
      if (p.key() == name) return p.value();
    }
    ADD_FAILURE() << "no parameter " << name;
    return torch::Tensor();
  };
  const auto stddev = [](const torch::Tensor& t) { return t.std().item<double>(); };
  const auto vgg = bm::find_model("vgg16")->build({3, 32, 32}, 10);
  // 64 x 3 x 3 = 576 outputs per input: sqrt(2 / 576) = 0.0589 over 1728 draws.
  EXPECT_NEAR(stddev(parameter(*vgg, "features.0.weight")), std::sqrt(2.0 / 576), 0.004);
  EXPECT_EQ(parameter(*vgg, "features.0.bias").abs().max().item<double>(), 0.0);
  EXPECT_NEAR(stddev(parameter(*vgg, "classifier.0.weight")), 0.01, 0.0005);
  EXPECT_EQ(parameter(*vgg, "classifier.6.bias").abs().max().item<double>(), 0.0);

  const auto resnet = bm::find_model("resnet18")->build({3, 32, 32}, 10);
  EXPECT_NEAR(stddev(parameter(*resnet, "conv1.weight")), std::sqrt(2.0 / (64 * 49)), 0.002);
  // Its linear layer keeps LibTorch's reset: uniform within 1/sqrt(512), a bias that is not zero.
  EXPECT_LE(parameter(*resnet, "fc.weight").abs().max().item<double>(), 1 / std::sqrt(512.0));
  EXPECT_GT(parameter(*resnet, "fc.bias").abs().max().item<double>(), 0.0);

  const auto mobilenet = bm::find_model("mobilenet_v2")->build({3, 32, 32}, 10);
  EXPECT_NEAR(stddev(parameter(*mobilenet, "classifier.1.weight")), 0.01, 0.001);

  const auto mnist = bm::find_model("mnist_cnn")->build({1, 28, 28}, 10);
  EXPECT_GT(parameter(*mnist, "conv1.bias").abs().max().item<double>(), 0.0);
}
