#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

#include "models/flop_tally.h"
#include "models/layer_scope.h"
#include "models/sequence_flops.h"
#include "models/sequence_models.h"

namespace batchscope::models {
namespace {

// The large configuration of pytorch/examples' word_language_model (Zaremba et al. 2014's large model).
constexpr int64_t kEmbedding = 1500;
constexpr int64_t kLstmHidden = 1500;
constexpr int64_t kLayers = 2;
constexpr double kLstmDropout = 0.65;
constexpr double kInitRange = 0.1;
// The example's default backpropagation-through-time length, and Penn Treebank's vocabulary.
constexpr int64_t kLstmSequenceLength = 35;
constexpr int64_t kLstmVocabulary = 10000;

void check_lstm_request(const SampleShape& input, int64_t classes) {
  check_token_input("lstm_lm", input, classes, kLstmSequenceLength, "10000 (Penn Treebank's)");
}

// RNNModel('LSTM', ...) of the example, untied, with its module names. It keeps the example's
// [sequence, batch] layout inside and starts every batch from a zero state (no carried hidden state,
// so every step of a sweep does the same work).
class LstmLanguageModel : public Network {
 public:
  explicit LstmLanguageModel(int64_t vocabulary)
      : drop_(register_module("drop", torch::nn::Dropout(kLstmDropout))),
        encoder_(register_module("encoder", torch::nn::Embedding(vocabulary, kEmbedding))),
        rnn_(register_module(
            "rnn",
            torch::nn::LSTM(
                torch::nn::LSTMOptions(kEmbedding, kLstmHidden).num_layers(kLayers).dropout(kLstmDropout)))),
        decoder_(register_module("decoder", torch::nn::Linear(kLstmHidden, vocabulary))) {
    torch::NoGradGuard no_grad;
    encoder_->weight.uniform_(-kInitRange, kInitRange);
    decoder_->weight.uniform_(-kInitRange, kInitRange);
    decoder_->bias.zero_();
  }

  // [batch, sequence] token ids to [sequence, batch, vocabulary] logits.
  torch::Tensor forward(torch::Tensor input) override {
    TORCH_CHECK(input.dim() == 2, "lstm_lm expects [batch, sequence] tokens, got ", input.sizes());
    torch::Tensor embedded, hidden;
    {
      LayerScope scope("encoder");
      embedded = drop_(encoder_(input.t()));
    }
    {
      LayerScope scope("rnn");
      hidden = std::get<0>(rnn_->forward(embedded));
    }
    LayerScope scope("decoder");
    return decoder_(drop_(hidden));
  }

  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets) override {
    return per_token_cross_entropy(output, targets);
  }

 private:
  torch::nn::Dropout drop_;
  torch::nn::Embedding encoder_;
  torch::nn::LSTM rnn_;
  torch::nn::Linear decoder_;
};

double lstm_forward_flops(const SampleShape& input, int64_t vocabulary) {
  check_lstm_request(input, vocabulary);
  const int64_t steps = input[0];
  int64_t total = 0;
  for (int64_t layer = 0; layer < kLayers; ++layer) {
    const int64_t layer_input = layer == 0 ? kEmbedding : kLstmHidden;
    total += flops::recurrent_layer(flops::RecurrentCell::kLstm, steps, layer_input, kLstmHidden, 1).total();
  }
  total += flops::linear(steps, kLstmHidden, vocabulary, true);
  return static_cast<double>(total);
}

// Uniform token ids as inputs and as next-token targets, both [batch, sequence].
Batch token_batch(int64_t batch, const SampleShape& input, int64_t vocabulary) {
  check_lstm_request(input, vocabulary);
  const auto tokens = torch::TensorOptions().dtype(torch::kLong);
  return {torch::randint(vocabulary, {batch, input[0]}, tokens),
          torch::randint(vocabulary, {batch, input[0]}, tokens)};
}

}  // namespace

ModelSpec lstm_lm_spec() {
  ModelSpec spec;
  spec.name = "lstm_lm";
  spec.summary = "word-level LSTM language model, 2 x 1500, PyTorch word_language_model large";
  spec.default_input = {kLstmSequenceLength};
  spec.default_classes = kLstmVocabulary;
  spec.input_kind = InputKind::Tokens;
  spec.sequence_axis = 0;
  spec.input_layout = "sequence length";
  // RNNModel('LSTM', 10000, 1500, 1500, 2, 0.65) in PyTorch: tests/integration/reference_parameters.py.
  spec.reference_parameters = 66034000;
  spec.reference = "pytorch/examples word_language_model, LSTM large, 10,000 words (66.0M)";
  spec.build = [](const SampleShape& input, int64_t classes) -> std::shared_ptr<Network> {
    check_lstm_request(input, classes);
    return std::make_shared<LstmLanguageModel>(classes);
  };
  spec.forward_flops = lstm_forward_flops;
  spec.synthetic_batch = token_batch;
  return spec;
}

}  // namespace batchscope::models
