#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/registry.h"
#include "models/sequence_flops.h"
#include "models/sequence_models.h"
#include "tests/test_support.h"

namespace bm = batchscope::models;
namespace flops = batchscope::models::flops;
using Shape = std::vector<int64_t>;

using batchscope::testing_support::invalid_argument_message;

namespace {

const char* const kSequenceModels[] = {"lstm_lm", "transformer", "deepspeech2", "deepspeech2_gru"};

const bm::ModelSpec& spec_of(const std::string& name) {
  const bm::ModelSpec* spec = bm::find_model(name);
  if (spec == nullptr) throw std::logic_error("no model " + name);
  return *spec;
}

double loss_of(bm::Network& network, const bm::Batch& batch) {
  return network.loss(network.forward(batch.inputs), batch.targets).item<double>();
}

// One loss and backward pass; every parameter must then hold a finite gradient.
void expect_gradients_everywhere(bm::Network& network, const bm::Batch& batch) {
  network.zero_grad();
  const torch::Tensor loss = network.loss(network.forward(batch.inputs), batch.targets);
  ASSERT_TRUE(std::isfinite(loss.item<double>()));
  loss.backward();
  for (const auto& parameter : network.named_parameters()) {
    const torch::Tensor& grad = parameter.value().grad();
    ASSERT_TRUE(grad.defined()) << parameter.key();
    EXPECT_TRUE(torch::isfinite(grad).all().item<bool>()) << parameter.key();
  }
}

// Loss on one fixed batch before and after `steps` plain SGD steps, with dropout off so that it falls
// steadily.
std::pair<double, double> loss_before_and_after_sgd(bm::Network& network, const bm::Batch& batch, double lr,
                                                    int steps) {
  network.eval();
  torch::optim::SGD optimizer(network.parameters(), torch::optim::SGDOptions(lr));
  const double before = loss_of(network, batch);
  for (int step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    network.loss(network.forward(batch.inputs), batch.targets).backward();
    optimizer.step();
  }
  return {before, loss_of(network, batch)};
}

int64_t recurrent_weight_elements(const bm::Network& network) {
  int64_t elements = 0;
  for (const auto& parameter : network.named_parameters()) {
    const std::string& name = parameter.key();
    if (name.find("weight_ih") != std::string::npos || name.find("weight_hh") != std::string::npos) {
      elements += parameter.value().numel();
    }
  }
  return elements;
}

}  // namespace

TEST(SequenceRegistry, FindsTheFourModels) {
  for (const char* name : kSequenceModels) {
    const bm::ModelSpec* spec = bm::find_model(name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_EQ(spec->name, name);
    EXPECT_FALSE(spec->summary.empty()) << name;
    EXPECT_FALSE(spec->reference.empty()) << name;
    EXPECT_NE(bm::known_model_names().find(name), std::string::npos) << name;
  }
}

TEST(SequenceRegistry, DescribeTheirInputs) {
  const bm::ModelSpec& lstm = spec_of("lstm_lm");
  EXPECT_EQ(lstm.default_input, Shape({35}));
  EXPECT_EQ(lstm.default_classes, 10000);
  EXPECT_EQ(lstm.input_kind, bm::InputKind::Tokens);
  EXPECT_EQ(lstm.sequence_axis, 0);
  const bm::ModelSpec& transformer = spec_of("transformer");
  EXPECT_EQ(transformer.default_input, Shape({128}));
  EXPECT_EQ(transformer.default_classes, 37000);
  EXPECT_EQ(transformer.input_kind, bm::InputKind::Tokens);
  EXPECT_EQ(transformer.sequence_axis, 0);
  for (const char* name : {"deepspeech2", "deepspeech2_gru"}) {
    const bm::ModelSpec& speech = spec_of(name);
    EXPECT_EQ(speech.default_input, Shape({1, 161, 500})) << name;
    EXPECT_EQ(speech.default_classes, 29) << name;
    EXPECT_EQ(speech.input_kind, bm::InputKind::Spectrogram) << name;
    EXPECT_EQ(speech.sequence_axis, 2) << name;
  }
}

// The references, counted in PyTorch 1.13 by tests/integration/reference_parameters.py:
// RNNModel('LSTM', 10000, 1500, 1500, 2) of pytorch/examples' word_language_model; nn.Transformer(512, 8,
// 6, 6, 2048) (44,140,544) plus one 37000 x 512 embedding; deepspeech.pytorch's DeepSpeech with 161 bins,
// 5 bidirectional layers of 1024 and 29 labels, LSTM and GRU.
TEST(SequenceParameterCounts, MatchTheReferenceModels) {
  const std::pair<const char*, int64_t> references[] = {{"lstm_lm", 66034000},
                                                        {"transformer", 63084544},
                                                        {"deepspeech2", 86618400},
                                                        {"deepspeech2_gru", 65036576}};
  for (const auto& [name, reference] : references) {
    const bm::ModelSpec& spec = spec_of(name);
    EXPECT_EQ(bm::count_parameters(*spec.build(spec.default_input, spec.default_classes)), reference) << name;
    EXPECT_EQ(spec.reference_parameters, reference) << name;
  }
}

TEST(SequenceParameterCounts, FollowVocabularyAndFrequencyBins) {
  // Per word: a 1500-wide embedding row, a 1500-wide decoder row and its bias.
  EXPECT_EQ(bm::count_parameters(*spec_of("lstm_lm").build({5}, 50)), 66034000 - (10000 - 50) * 3001);
  // Per token: one 512-wide row of the shared embedding; the sequence length adds only buffers.
  EXPECT_EQ(bm::count_parameters(*spec_of("transformer").build({6}, 40)), 44140544 + 40 * 512);
  // 9 bins leave 3 after the front end, so the first LSTM layer sees 96 inputs instead of 1312; the
  // reference script gives 76,656,928 for DeepSpeech at 9 bins.
  const int64_t first_layer_inputs_dropped = (1312 - 96) * 4 * 1024 * 2;
  EXPECT_EQ(bm::count_parameters(*spec_of("deepspeech2").build({1, 9, 20}, 29)),
            86618400 - first_layer_inputs_dropped);
  EXPECT_EQ(86618400 - first_layer_inputs_dropped, 76656928);
}

TEST(SequenceParameterNames, FollowTheReferenceLayouts) {
  const auto lstm = spec_of("lstm_lm").build({4}, 10);
  const auto lstm_parameters = lstm->named_parameters();
  for (const char* name :
       {"encoder.weight", "rnn.weight_ih_l0", "rnn.bias_hh_l1", "decoder.weight", "decoder.bias"}) {
    EXPECT_TRUE(lstm_parameters.contains(name)) << name;
  }

  const auto transformer = spec_of("transformer").build({4}, 10);
  const auto transformer_parameters = transformer->named_parameters();
  for (const char* name : {"embedding.weight", "transformer.encoder.layers.5.self_attn.in_proj_weight",
                           "transformer.decoder.layers.0.multihead_attn.out_proj.weight",
                           "transformer.encoder.norm.weight", "transformer.decoder.norm.bias"}) {
    EXPECT_TRUE(transformer_parameters.contains(name)) << name;
  }
  // The positions are a buffer and the output projection reuses the embedding.
  EXPECT_FALSE(transformer_parameters.contains("positions"));
  EXPECT_TRUE(transformer->named_buffers().contains("positions"));
  EXPECT_EQ(transformer_parameters.size(), 1 + 6 * 12 + 6 * 18 + 4);

  const auto speech = spec_of("deepspeech2").build({1, 9, 20}, 29);
  const auto speech_parameters = speech->named_parameters();
  for (const char* name : {"conv.seq_module.0.weight", "conv.seq_module.4.bias",
                           "rnns.0.rnn.weight_ih_l0_reverse", "rnns.1.batch_norm.module.weight",
                           "rnns.4.rnn.bias_hh_l0", "fc.0.module.0.weight", "fc.0.module.1.weight"}) {
    EXPECT_TRUE(speech_parameters.contains(name)) << name;
  }
  // No batch norm before the first recurrent layer, no bias on the last linear layer.
  EXPECT_FALSE(speech_parameters.contains("rnns.0.batch_norm.module.weight"));
  EXPECT_FALSE(speech_parameters.contains("fc.0.module.1.bias"));
  EXPECT_TRUE(speech->named_buffers().contains("rnns.2.batch_norm.module.running_mean"));
}

TEST(LstmLm, ForwardBackwardAndLoss) {
  torch::manual_seed(1);
  const bm::ModelSpec& spec = spec_of("lstm_lm");
  const auto network = spec.build({6}, 20);
  const bm::Batch batch = spec.synthetic_batch(3, {6}, 20);
  EXPECT_EQ(network->forward(batch.inputs).sizes(), (Shape{6, 3, 20}));
  expect_gradients_everywhere(*network, batch);
}

TEST(LstmLm, SgdStepsLowerTheLossOfOneBatch) {
  torch::manual_seed(2);
  const bm::ModelSpec& spec = spec_of("lstm_lm");
  const auto network = spec.build({5}, 12);
  const bm::Batch batch = spec.synthetic_batch(2, {5}, 12);
  const auto [before, after] = loss_before_and_after_sgd(*network, batch, 1.0, 4);
  // Near log(12) at first: the example's initialisation gives small logits.
  EXPECT_NEAR(before, std::log(12.0), 0.2);
  EXPECT_LT(after, before - 0.2);
}

TEST(Transformer, ForwardBackwardAndLoss) {
  torch::manual_seed(3);
  const bm::ModelSpec& spec = spec_of("transformer");
  const auto network = spec.build({5}, 30);
  const bm::Batch batch = spec.synthetic_batch(2, {5}, 30);
  EXPECT_EQ(network->forward(batch.inputs).sizes(), (Shape{5, 2, 30}));
  expect_gradients_everywhere(*network, batch);
}

TEST(Transformer, TargetPositionsSeeOnlyEarlierTargets) {
  torch::manual_seed(4);
  const auto network = spec_of("transformer").build({5}, 30);
  network->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor tokens = torch::randint(30, {1, 2, 5}, torch::TensorOptions().dtype(torch::kLong));
  torch::Tensor changed = tokens.clone();
  changed[0][1][4] = (changed[0][1][4].item<int64_t>() + 1) % 30;
  const torch::Tensor a = network->forward(tokens);
  const torch::Tensor b = network->forward(changed);
  // Changing the last target token leaves the earlier positions' logits alone, and changes the last.
  EXPECT_TRUE(torch::allclose(a.slice(0, 0, 4), b.slice(0, 0, 4), 1e-5, 1e-5));
  EXPECT_FALSE(torch::allclose(a[4], b[4], 1e-5, 1e-5));
}

TEST(Transformer, SgdStepsLowerTheLossOfOneBatch) {
  torch::manual_seed(5);
  const bm::ModelSpec& spec = spec_of("transformer");
  const auto network = spec.build({4}, 16);
  const bm::Batch batch = spec.synthetic_batch(2, {4}, 16);
  const auto [before, after] = loss_before_and_after_sgd(*network, batch, 0.001, 4);
  EXPECT_LT(after, before - 0.5);
}

TEST(DeepSpeech2, ForwardBackwardAndCtcLoss) {
  // Labels: 5 for the GRU; 2 for the LSTM, where every character is the same and repeats, the hardest
  // case for CTC's alignment.
  const std::pair<const char*, int64_t> cases[] = {{"deepspeech2", 2}, {"deepspeech2_gru", 5}};
  for (const auto& [name, labels] : cases) {
    SCOPED_TRACE(name);
    torch::manual_seed(6);
    const bm::ModelSpec& spec = spec_of(name);
    const auto network = spec.build({1, 9, 12}, labels);
    const bm::Batch batch = spec.synthetic_batch(2, {1, 9, 12}, labels);
    // 12 frames halve to 6 in the first convolution, which take round(0.3 * 6) = 2 characters.
    EXPECT_EQ(network->forward(batch.inputs).sizes(), (Shape{6, 2, labels}));
    EXPECT_EQ(batch.targets.sizes(), (Shape{2, 2}));
    expect_gradients_everywhere(*network, batch);
    // A single frame still aligns with its single label.
    const bm::Batch shortest = spec.synthetic_batch(2, {1, 9, 1}, labels);
    EXPECT_TRUE(std::isfinite(loss_of(*network, shortest)));
  }
}

TEST(SyntheticBatches, TokenModels) {
  const bm::Batch lstm = spec_of("lstm_lm").synthetic_batch(4, {7}, 13);
  EXPECT_EQ(lstm.inputs.sizes(), (Shape{4, 7}));
  EXPECT_EQ(lstm.targets.sizes(), (Shape{4, 7}));
  const bm::Batch transformer = spec_of("transformer").synthetic_batch(4, {7}, 13);
  EXPECT_EQ(transformer.inputs.sizes(), (Shape{4, 2, 7}));
  EXPECT_EQ(transformer.targets.sizes(), (Shape{4, 7}));
  for (const torch::Tensor& tokens : {lstm.inputs, lstm.targets, transformer.inputs, transformer.targets}) {
    EXPECT_EQ(tokens.scalar_type(), torch::kLong);
    EXPECT_GE(tokens.min().item<int64_t>(), 0);
    EXPECT_LT(tokens.max().item<int64_t>(), 13);
  }
}

TEST(SyntheticBatches, Spectrograms) {
  const bm::Batch batch = spec_of("deepspeech2").synthetic_batch(3, {1, 161, 500}, 29);
  EXPECT_EQ(batch.inputs.sizes(), (Shape{3, 1, 161, 500}));
  EXPECT_EQ(batch.inputs.scalar_type(), torch::kFloat);
  // 500 frames leave 250 after the front end; 0.3 characters per output frame.
  EXPECT_EQ(batch.targets.sizes(), (Shape{3, 75}));
  EXPECT_EQ(batch.targets.scalar_type(), torch::kLong);
  EXPECT_GE(batch.targets.min().item<int64_t>(), 1);  // never the blank
  EXPECT_LT(batch.targets.max().item<int64_t>(), 29);
  EXPECT_EQ(spec_of("deepspeech2_gru").synthetic_batch(1, {1, 9, 1}, 29).targets.sizes(), (Shape{1, 1}));
}

TEST(SequenceFlops, LinearConvolutionSoftmaxLayerNorm) {
  EXPECT_EQ(flops::linear(3, 4, 5, true), 3 * (2 * 4 * 5 + 5));
  EXPECT_EQ(flops::linear(3, 4, 5, false), 3 * 2 * 4 * 5);
  EXPECT_EQ(flops::conv2d(10, 2, 3, 4, true), 10 * (2 * 2 * 3 * 4 + 1));
  EXPECT_EQ(flops::softmax(7), 35);
  EXPECT_EQ(flops::layer_norm(7), 49);
}

TEST(SequenceFlops, RecurrentLayers) {
  // 3 steps, 2 inputs, 5 hidden units.
  const flops::RecurrentFlops lstm = flops::recurrent_layer(flops::RecurrentCell::kLstm, 3, 2, 5, 1);
  EXPECT_EQ(lstm.matmul, 3 * 2 * (4 * 5) * (2 + 5));
  // Biases 8h, adding the products 4h, activations 4h, cell 3h, hidden 2h.
  EXPECT_EQ(lstm.pointwise, 3 * 21 * 5);
  EXPECT_EQ(lstm.total(), 840 + 315);
  const flops::RecurrentFlops gru = flops::recurrent_layer(flops::RecurrentCell::kGru, 3, 2, 5, 1);
  EXPECT_EQ(gru.matmul, 3 * 2 * (3 * 5) * (2 + 5));
  // Biases 6h, r and z adds 2h, n 2h, activations 3h, h' = n + z * (h - n) 3h.
  EXPECT_EQ(gru.pointwise, 3 * 16 * 5);
  const flops::RecurrentFlops both = flops::recurrent_layer(flops::RecurrentCell::kGru, 3, 2, 5, 2);
  EXPECT_EQ(both.total(), 2 * gru.total());
}

TEST(SequenceFlops, MultiHeadAttention) {
  // 3 queries over 4 keys, width 8, 2 heads.
  const int64_t projections = 3 * (2 * 8 * 8 + 8) + 2 * 4 * (2 * 8 * 8 + 8) + 3 * (2 * 8 * 8 + 8);
  const int64_t scale = 3 * 8;
  const int64_t scores_and_weighted_values = 2 * (2 * 3 * 4 * 8);
  const int64_t softmax = 5 * 2 * 3 * 4;
  const int64_t unmasked = projections + scale + scores_and_weighted_values + softmax;
  EXPECT_EQ(unmasked, 2432);
  EXPECT_EQ(flops::multi_head_attention(3, 4, 8, 2, false), unmasked);
  EXPECT_EQ(flops::multi_head_attention(3, 4, 8, 2, true), unmasked + 2 * 3 * 4);
}

TEST(SequenceFlops, TransformerLayers) {
  const flops::TransformerDims dims{8, 2, 16};
  const int64_t add_and_norm = 3 * 8 + 7 * 3 * 8;
  const int64_t feed_forward = 3 * (2 * 8 * 16 + 16) + 3 * 16 + 3 * (2 * 16 * 8 + 8);
  const int64_t self_attention = flops::multi_head_attention(3, 3, 8, 2, false);
  EXPECT_EQ(flops::transformer_encoder_layer(3, dims), self_attention + feed_forward + 2 * add_and_norm);
  EXPECT_EQ(flops::transformer_encoder_layer(3, dims), 4074);
  // 3 target positions over 4 source positions: a masked self-attention and a cross-attention.
  EXPECT_EQ(flops::transformer_decoder_layer(3, 4, dims), flops::multi_head_attention(3, 3, 8, 2, true) +
                                                              flops::multi_head_attention(3, 4, 8, 2, false) +
                                                              feed_forward + 3 * add_and_norm);
  EXPECT_EQ(flops::transformer_decoder_layer(3, 4, dims), 6716);
}

TEST(ModelFlops, LstmLmByHandAndLinearInLength) {
  const bm::ModelSpec& spec = spec_of("lstm_lm");
  const double per_step_layer = 2.0 * 4 * 1500 * (1500 + 1500) + 21 * 1500;
  const double decoder = 2.0 * 1500 * 10000 + 10000;
  EXPECT_EQ(spec.forward_flops({35}, 10000), 35 * (2 * per_step_layer + decoder));
  EXPECT_EQ(spec.forward_flops({70}, 10000), 2 * spec.forward_flops({35}, 10000));
  EXPECT_EQ(spec.forward_flops({1}, 10000) * 35, spec.forward_flops({35}, 10000));
}

// The matrix products of the count are 2 FLOPs per recurrent weight per step, read off the module built.
TEST(ModelFlops, LstmLmMatmulsFollowTheModuleWeights) {
  const int64_t steps = 4;
  const auto network = spec_of("lstm_lm").build({steps}, 10);
  const auto parameters = network->named_parameters();
  const int64_t weights = recurrent_weight_elements(*network);
  EXPECT_EQ(weights, 2 * (4 * 1500 * 1500 + 4 * 1500 * 1500));
  const int64_t pointwise = 2 * steps * 21 * 1500;
  const int64_t decoder =
      2 * steps * parameters["decoder.weight"].numel() + steps * parameters["decoder.bias"].numel();
  EXPECT_EQ(spec_of("lstm_lm").forward_flops({steps}, 10),
            static_cast<double>(2 * steps * weights + pointwise + decoder));
}

TEST(ModelFlops, DeepSpeech2RecurrentMatmulsFollowTheModuleWeights) {
  const auto network = spec_of("deepspeech2_gru").build({1, 9, 20}, 29);
  const int64_t frames = 10;
  int64_t matmul = flops::recurrent_layer(flops::RecurrentCell::kGru, frames, 96, 1024, 2).matmul;
  for (int layer = 1; layer < 5; ++layer) {
    matmul += flops::recurrent_layer(flops::RecurrentCell::kGru, frames, 1024, 1024, 2).matmul;
  }
  EXPECT_EQ(matmul, 2 * frames * recurrent_weight_elements(*network));
}

TEST(ModelFlops, DeepSpeech2ByHand) {
  // 9 bins x 20 frames: 5 x 10 after the first convolution, 3 x 10 after the second.
  const int64_t conv1 = 32 * 5 * 10 * (2 * 1 * 41 * 11 + 1) + 3 * (32 * 5 * 10);
  const int64_t conv2 = 32 * 3 * 10 * (2 * 32 * 21 * 11 + 1) + 3 * (32 * 3 * 10);
  const int64_t lstm_step_first = 2 * 4 * 1024 * (96 + 1024) + 21 * 1024;
  const int64_t lstm_step = 2 * 4 * 1024 * (1024 + 1024) + 21 * 1024;
  const int64_t sum_directions = 10 * 1024;
  const int64_t batch_norm = 2 * 10 * 1024;
  const int64_t rnns =
      (2 * 10 * lstm_step_first + sum_directions) + 4 * (batch_norm + 2 * 10 * lstm_step + sum_directions);
  const int64_t fc = batch_norm + 2 * 10 * 1024 * 29;
  EXPECT_EQ(spec_of("deepspeech2").forward_flops({1, 9, 20}, 29),
            static_cast<double>(conv1 + conv2 + rnns + fc));
  // The GRU has three gates to the LSTM's four and fewer element-wise steps.
  EXPECT_LT(spec_of("deepspeech2_gru").forward_flops({1, 9, 20}, 29),
            spec_of("deepspeech2").forward_flops({1, 9, 20}, 29));
}

TEST(ModelFlops, TransformerAttentionIsQuadraticInLength) {
  const bm::ModelSpec& spec = spec_of("transformer");
  const auto f = [&](int64_t length) { return spec.forward_flops({length}, 37000); };
  // f(S) = a S + b S^2: the third difference through f(0) = 0 vanishes, and f(2) - 2 f(1) = 2b, where
  // b per layer is 4d from Q K^T and the weighted values plus 5 heads of softmax (and a mask add in the
  // decoder's self-attention): 6 encoder layers, 6 decoder self- and 6 cross-attentions.
  EXPECT_EQ(f(3) - 3 * f(2) + 3 * f(1), 0.0);
  const double b = 6 * (4 * 512 + 5 * 8) + 6 * (4 * 512 + 6 * 8) + 6 * (4 * 512 + 5 * 8);
  EXPECT_EQ(f(2) - 2 * f(1), 2 * b);
  EXPECT_GT(f(256), 2 * f(128));
  // The tied output projection is the only term in the vocabulary: 2 * 512 per token and position.
  EXPECT_EQ(f(128) - spec.forward_flops({128}, 1000), 128.0 * 2 * 512 * 36000);
}

TEST(SequenceInputChecks, BadShapesAndClassesAreRefusedNamingTheModel) {
  struct Case {
    const char* model;
    Shape good;
    std::vector<Shape> bad;
  };
  const Case cases[] = {
      {"lstm_lm", {35}, {{3, 224, 224}, {}, {0}, {-2}, {35, 2}}},
      {"transformer", {128}, {{3, 224, 224}, {0}, {128, 128}}},
      {"deepspeech2", {1, 161, 500}, {{500}, {161, 500}, {3, 161, 500}, {1, 0, 500}, {1, 161, 0}}},
      {"deepspeech2_gru", {1, 161, 500}, {{1, 1, 161, 500}, {2, 161, 500}}},
  };
  for (const Case& c : cases) {
    const bm::ModelSpec& spec = spec_of(c.model);
    for (const Shape& shape : c.bad) {
      const std::string message =
          invalid_argument_message([&] { spec.forward_flops(shape, spec.default_classes); });
      EXPECT_EQ(message.rfind(std::string(c.model) + " ", 0), 0u) << c.model << ": " << message;
      EXPECT_THROW(spec.build(shape, spec.default_classes), std::invalid_argument) << c.model;
      EXPECT_THROW(spec.synthetic_batch(1, shape, spec.default_classes), std::invalid_argument) << c.model;
    }
    for (int64_t classes : {1, 0, -5}) {
      const std::string message = invalid_argument_message([&] { spec.build(c.good, classes); });
      EXPECT_EQ(message.rfind(std::string(c.model) + " ", 0), 0u) << c.model << ": " << message;
      EXPECT_THROW(spec.forward_flops(c.good, classes), std::invalid_argument) << c.model;
    }
    EXPECT_NO_THROW(spec.forward_flops(c.good, 2)) << c.model;
  }
}

TEST(SequenceInputChecks, MessagesSayWhatToGive) {
  const std::string lstm = invalid_argument_message([] {
    spec_of("lstm_lm").forward_flops({3, 224, 224}, 10000);
  });
  EXPECT_NE(lstm.find("3-dimensional sample shape '3x224x224'"), std::string::npos) << lstm;
  EXPECT_NE(lstm.find("input: [35]"), std::string::npos) << lstm;
  const std::string speech = invalid_argument_message([] {
    spec_of("deepspeech2").forward_flops({3, 161, 500}, 29);
  });
  EXPECT_NE(speech.find("'3x161x500'"), std::string::npos) << speech;
  EXPECT_NE(speech.find("input: [1, 161, 500]"), std::string::npos) << speech;
  const std::string vocabulary = invalid_argument_message([] { spec_of("transformer").build({128}, 1); });
  EXPECT_NE(vocabulary.find("classes: 1"), std::string::npos) << vocabulary;
}

TEST(SequenceInputChecks, PaddedFrontEndTakesAnyPositiveSpectrogram) {
  // Every window of the front end is padded to fit, so even a single bin and frame gets through.
  EXPECT_NO_THROW(spec_of("deepspeech2").forward_flops({1, 1, 1}, 29));
}
