#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "models/flop_tally.h"
#include "models/layer_scope.h"
#include "models/sequence_flops.h"
#include "models/sequence_models.h"

namespace batchscope::models {
namespace {

// Transformer base of Vaswani et al. 2017.
constexpr flops::TransformerDims kDims{512, 8, 2048};
constexpr int64_t kEncoderLayers = 6;
constexpr int64_t kDecoderLayers = 6;
constexpr double kTransformerDropout = 0.1;
// A padded length bucket that holds nearly every WMT sentence (they average some 25-30 BPE tokens),
// and long enough that the quadratic attention terms show; the paper's shared En-De BPE vocabulary.
constexpr int64_t kTransformerSequenceLength = 128;
constexpr int64_t kTransformerVocabulary = 37000;

void check_transformer_request(const SampleShape& input, int64_t classes) {
  check_token_input("transformer", input, classes, kTransformerSequenceLength,
                    "37000 (the paper's shared BPE)");
}

// [length, 1, model_dim]: PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(p / 10000^(2i/d)).
torch::Tensor sinusoidal_positions(int64_t length, int64_t model_dim) {
  const torch::Tensor position = torch::arange(length, torch::kFloat).unsqueeze(1);
  const torch::Tensor frequency =
      torch::exp(torch::arange(0, model_dim, 2, torch::kFloat) * (-std::log(10000.0) / model_dim));
  torch::Tensor table = torch::zeros({length, model_dim});
  table.slice(1, 0, model_dim, 2).copy_(torch::sin(position * frequency));
  table.slice(1, 1, model_dim, 2).copy_(torch::cos(position * frequency));
  return table.unsqueeze(1);
}

// Encoder-decoder translation model around torch::nn::Transformer ([sequence, batch, feature] inside).
// One embedding serves source, target and, transposed, the output projection (the paper's weight
// sharing); positions and the causal mask are buffers built for the sample's length, so they move with
// the module and cost no copy per step.
class TranslationTransformer : public Network {
 public:
  TranslationTransformer(int64_t vocabulary, int64_t length)
      : embedding_(register_module("embedding", torch::nn::Embedding(vocabulary, kDims.model))),
        dropout_(register_module("dropout", torch::nn::Dropout(kTransformerDropout))),
        transformer_(register_module(
            "transformer", torch::nn::Transformer(torch::nn::TransformerOptions(kDims.model, kDims.heads)
                                                      .num_encoder_layers(kEncoderLayers)
                                                      .num_decoder_layers(kDecoderLayers)
                                                      .dim_feedforward(kDims.feed_forward)
                                                      .dropout(kTransformerDropout)))),
        positions_(register_buffer("positions", sinusoidal_positions(length, kDims.model))),
        target_mask_(register_buffer("target_mask",
                                     torch::nn::TransformerImpl::generate_square_subsequent_mask(length))) {
    // Scaled by sqrt(d_model) on the way in, so that embedded tokens start at unit variance.
    torch::NoGradGuard no_grad;
    torch::nn::init::normal_(embedding_->weight, 0.0, 1.0 / std::sqrt(static_cast<double>(kDims.model)));
  }

  // [batch, 2, sequence] token ids (source, then the decoder's input) to [sequence, batch, vocabulary]
  // logits.
  torch::Tensor forward(torch::Tensor input) override {
    TORCH_CHECK(input.dim() == 3 && input.size(1) == 2,
                "transformer expects [batch, 2, sequence] tokens (source and target), got ", input.sizes());
    const int64_t length = input.size(2);
    TORCH_CHECK(length <= positions_.size(0), "transformer was built for sequences of ", positions_.size(0),
                " tokens, got ", length);
    torch::Tensor source, target, decoded;
    {
      LayerScope scope("embedding");
      source = embed(input.select(1, 0).t());
      target = embed(input.select(1, 1).t());
    }
    {
      LayerScope scope("transformer");
      const torch::Tensor mask = target_mask_.slice(0, 0, length).slice(1, 0, length);
      decoded = transformer_->forward(source, target, torch::Tensor(), mask);
    }
    // The output projection shares the embedding's weight.
    LayerScope scope("embedding.output");
    return torch::nn::functional::linear(decoded, embedding_->weight);
  }

  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets) override {
    return per_token_cross_entropy(output, targets);
  }

 private:
  torch::Tensor embed(const torch::Tensor& tokens) {
    const torch::Tensor scaled = embedding_(tokens) * std::sqrt(static_cast<double>(kDims.model));
    return dropout_(scaled + positions_.slice(0, 0, tokens.size(0)));
  }

  torch::nn::Embedding embedding_;
  torch::nn::Dropout dropout_;
  torch::nn::Transformer transformer_;
  torch::Tensor positions_;
  torch::Tensor target_mask_;
};

double transformer_forward_flops(const SampleShape& input, int64_t vocabulary) {
  check_transformer_request(input, vocabulary);
  const int64_t length = input[0];
  const int64_t embedded = length * kDims.model;
  // Scaling by sqrt(d_model) and adding positions, for the source and for the target.
  int64_t total = 2 * (2 * embedded);
  total += kEncoderLayers * flops::transformer_encoder_layer(length, kDims);
  total += kDecoderLayers * flops::transformer_decoder_layer(length, length, kDims);
  // The final layer norms of the encoder and the decoder stacks, then the tied output projection.
  total += 2 * flops::layer_norm(embedded);
  total += flops::linear(length, kDims.model, vocabulary, false);
  return static_cast<double>(total);
}

// Source and decoder-input tokens as inputs [batch, 2, sequence]; target tokens [batch, sequence].
Batch translation_batch(int64_t batch, const SampleShape& input, int64_t vocabulary) {
  check_transformer_request(input, vocabulary);
  const auto tokens = torch::TensorOptions().dtype(torch::kLong);
  return {torch::randint(vocabulary, {batch, 2, input[0]}, tokens),
          torch::randint(vocabulary, {batch, input[0]}, tokens)};
}

}  // namespace

ModelSpec transformer_spec() {
  ModelSpec spec;
  spec.name = "transformer";
  spec.summary = "Transformer base translation model, 6+6 layers of 512, shared 37k embedding";
  spec.default_input = {kTransformerSequenceLength};
  spec.default_classes = kTransformerVocabulary;
  spec.input_kind = InputKind::Tokens;
  spec.sequence_axis = 0;
  spec.input_layout = "sequence length";
  // torch.nn.Transformer(512, 8, 6, 6, 2048) has 44,140,544 parameters, plus the 37000 x 512 embedding;
  // see tests/integration/reference_parameters.py.
  spec.reference_parameters = 63084544;
  spec.reference = "torch.nn.Transformer(512, 8, 6, 6, 2048) + tied 37,000-token embedding (63.1M)";
  spec.build = [](const SampleShape& input, int64_t classes) -> std::shared_ptr<Network> {
    check_transformer_request(input, classes);
    return std::make_shared<TranslationTransformer>(classes, input[0]);
  };
  spec.forward_flops = transformer_forward_flops;
  spec.synthetic_batch = translation_batch;
  return spec;
}

}  // namespace batchscope::models
