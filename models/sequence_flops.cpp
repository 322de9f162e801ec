#include "models/sequence_flops.h"

#include <c10/util/Exception.h>

namespace batchscope::models::flops {
namespace {

constexpr int64_t kSoftmaxPerElement = 5;
constexpr int64_t kLayerNormPerElement = 7;

int64_t feed_forward(int64_t length, const TransformerDims& dims) {
  return linear(length, dims.model, dims.feed_forward, true) + length * dims.feed_forward +
         linear(length, dims.feed_forward, dims.model, true);
}

// The residual add and layer norm that follow every sublayer of a post-norm transformer layer.
int64_t add_and_norm(int64_t length, int64_t model_dim) {
  return length * model_dim + layer_norm(length * model_dim);
}

}  // namespace

int64_t linear(int64_t rows, int64_t in_features, int64_t out_features, bool bias) {
  return rows * (2 * in_features * out_features + (bias ? out_features : 0));
}

int64_t conv2d(int64_t output_elements, int64_t in_channels, int64_t kernel_height, int64_t kernel_width,
               bool bias) {
  return output_elements * (2 * in_channels * kernel_height * kernel_width + (bias ? 1 : 0));
}

int64_t softmax(int64_t elements) { return kSoftmaxPerElement * elements; }

int64_t layer_norm(int64_t elements) { return kLayerNormPerElement * elements; }

RecurrentFlops recurrent_layer(RecurrentCell cell, int64_t steps, int64_t input_size, int64_t hidden_size,
                               int64_t directions) {
  TORCH_CHECK(directions == 1 || directions == 2, "a recurrent layer has 1 or 2 directions, not ",
              directions);
  const bool lstm = cell == RecurrentCell::kLstm;
  const int64_t gates = lstm ? 4 : 3;
  const int64_t h = hidden_size;
  // Per step, the header's terms in order: biases, adding the products, activations, state update.
  const int64_t pointwise_per_step = lstm ? (8 + 4 + 4 + 3 + 2) * h : (6 + 2 + 2 + 3 + 3) * h;
  RecurrentFlops flops;
  flops.matmul = directions * steps * 2 * gates * h * (input_size + h);
  flops.pointwise = directions * steps * pointwise_per_step;
  return flops;
}

int64_t multi_head_attention(int64_t query_length, int64_t key_length, int64_t model_dim, int64_t heads,
                             bool masked) {
  TORCH_CHECK(heads >= 1 && model_dim % heads == 0, model_dim, " features do not split into ", heads,
              " heads");
  const int64_t projections = linear(query_length, model_dim, model_dim, true) +
                              2 * linear(key_length, model_dim, model_dim, true) +
                              linear(query_length, model_dim, model_dim, true);
  const int64_t scores = heads * query_length * key_length;
  const int64_t scale_queries = query_length * model_dim;
  const int64_t products = 2 * (2 * query_length * key_length * model_dim);
  return projections + scale_queries + products + (masked ? scores : 0) + softmax(scores);
}

int64_t transformer_encoder_layer(int64_t length, const TransformerDims& dims) {
  return multi_head_attention(length, length, dims.model, dims.heads, false) +
         add_and_norm(length, dims.model) + feed_forward(length, dims) + add_and_norm(length, dims.model);
}

int64_t transformer_decoder_layer(int64_t target_length, int64_t source_length, const TransformerDims& dims) {
  return multi_head_attention(target_length, target_length, dims.model, dims.heads, true) +
         add_and_norm(target_length, dims.model) +
         multi_head_attention(target_length, source_length, dims.model, dims.heads, false) +
         add_and_norm(target_length, dims.model) + feed_forward(target_length, dims) +
         add_and_norm(target_length, dims.model);
}

}  // namespace batchscope::models::flops
