#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/portable_dropout.h"
#include "models/registry.h"

namespace bm = batchscope::models;

namespace {

at::Generator host_generator(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

torch::Tensor ones(int64_t n) { return torch::ones({n, 50}); }

}  // namespace

TEST(PortableDropout, WithoutAHostGeneratorItIsLibTorchsDropout) {
  bm::PortableDropout portable(torch::nn::DropoutOptions(0.3));
  torch::nn::Dropout plain(torch::nn::DropoutOptions(0.3));
  const torch::Tensor x = torch::randn({64, 50});
  torch::manual_seed(11);
  const torch::Tensor a = portable(x);
  torch::manual_seed(11);
  const torch::Tensor b = plain(x);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(portable->draws_on_host());
  // The device's generator: a new seed, new masks.
  torch::manual_seed(12);
  EXPECT_FALSE(torch::equal(portable(x), a));
}

TEST(PortableDropout, HostMasksComeFromItsGeneratorAloneAndScaleByTheKeptShare) {
  const double p = 0.25;
  bm::PortableDropout first{torch::nn::DropoutOptions(p)}, second{torch::nn::DropoutOptions(p)};
  first->draw_masks_from(host_generator(7));
  second->draw_masks_from(host_generator(7));
  ASSERT_TRUE(first->draws_on_host());
  const torch::Tensor x = ones(400);
  torch::manual_seed(1);
  const torch::Tensor a = first(x);
  torch::manual_seed(2);  // the default generator does not enter
  const torch::Tensor b = second(x);
  EXPECT_TRUE(torch::equal(a, b));

  // The mask as a generator of the same seed draws it, scaled by 1 / (1 - p).
  at::Generator reference = host_generator(7);
  const torch::Tensor mask = torch::empty({400, 50}).bernoulli_(1 - p, reference).div_(1 - p);
  EXPECT_TRUE(torch::equal(a, mask));
  const double dropped = (a == 0).to(torch::kDouble).mean().item<double>();
  EXPECT_NEAR(dropped, p, 0.01);
  const auto scale = static_cast<float>(1 / (1 - p));
  EXPECT_TRUE(((a == 0) | (a == scale)).all().item<bool>());

  // The next step draws the next mask of the stream, not the same one again.
  EXPECT_FALSE(torch::equal(first(x), a));
}

TEST(PortableDropout, HostMasksCarryTheGradientAndLeaveEvaluationAlone) {
  bm::PortableDropout dropout(torch::nn::DropoutOptions(0.5));
  dropout->draw_masks_from(host_generator(3));
  const torch::Tensor x = torch::randn({32, 50}, torch::requires_grad());
  const torch::Tensor y = dropout(x);
  y.sum().backward();
  // d(x * mask)/dx = mask, which is y / x where x is not zero.
  EXPECT_TRUE(torch::allclose(x.grad(), y.detach() / x.detach()));

  dropout->eval();
  EXPECT_TRUE(torch::equal(dropout(x), x));
  dropout->train();
  bm::PortableDropout none(torch::nn::DropoutOptions(0.0)), all(torch::nn::DropoutOptions(1.0));
  none->draw_masks_from(host_generator(3));
  all->draw_masks_from(host_generator(3));
  EXPECT_TRUE(torch::equal(none(x), x));
  EXPECT_TRUE(torch::equal(all(x.detach()), torch::zeros_like(x)));
  dropout->draw_masks_from(std::nullopt);
  EXPECT_FALSE(dropout->draws_on_host());
}

TEST(PortableDropout, SwitchingAModelNamesWhatStillDrawsOnTheDevice) {
  const auto switched = [](const std::string& name, const bm::SampleShape& input) {
    auto model = bm::find_model(name)->build(input, 10);
    return bm::draw_dropout_masks_on_host(*model, host_generator(0));
  };
  const bm::HostMasks mnist = switched("mnist_cnn", {1, 28, 28});
  EXPECT_EQ(mnist.switched, 2);
  EXPECT_TRUE(mnist.unswitched.empty());
  EXPECT_EQ(switched("vgg16", {3, 32, 32}).switched, 2);
  EXPECT_EQ(switched("mobilenet_v2", {3, 32, 32}).switched, 1);

  // LibTorch's own random modules cannot be switched, and are named.
  struct Mixed : torch::nn::Module {
    Mixed() {
      register_module("plain", torch::nn::Dropout(0.1));
      register_module("unused", torch::nn::Dropout(0.0));
      register_module("rnn", torch::nn::LSTM(torch::nn::LSTMOptions(4, 4).num_layers(2).dropout(0.2)));
      register_module("portable", bm::PortableDropout(torch::nn::DropoutOptions(0.1)));
    }
  } mixed;
  const bm::HostMasks m = bm::draw_dropout_masks_on_host(mixed, host_generator(0));
  EXPECT_EQ(m.switched, 1);
  EXPECT_EQ(m.unswitched, (std::vector<std::string>{"plain", "rnn"}));
}
