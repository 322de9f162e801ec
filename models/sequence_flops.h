#pragma once

#include <cstdint>

namespace batchscope::models::flops {

// Forward FLOPs of the parts of sequence models, for one sample, under the conventions of
// models/flop_tally.h (a multiply-add is 2 FLOPs, a bias add 1 per output, an element-wise activation
// 1 per element, dropout 0) and these for the parts image models lack:
//   embedding lookup   0: a gather, no arithmetic
//   scaling, adding positions, residual adds, summing two directions: 1 per element
//   conv2d             2 * in_channels * kernel_h * kernel_w per output element, +1 with a bias
//   batch norm         2 per element, the scale and shift it folds into (as FlopTally)
//   LSTM, per step and direction, h hidden units: matmuls 2 * 4h * (in + h); 8h for the two bias vectors
//                      PyTorch keeps (b_ih, b_hh); 4h to add the two products; 4h gate activations
//                      (3 sigmoids, 1 tanh); 3h for c' = f*c + i*g; 2h for h' = o * tanh(c')
//   GRU, per step and direction: matmuls 2 * 3h * (in + h); 6h biases; 2h to add the products of r and z;
//                      2h for n's r * (W_hn h + b_hn) + W_in x; 3h activations; 3h for h' = n + z * (h - n)
//   softmax            5 per element: the running max, subtracting it, exp, the sum, the division
//   layer norm         7 per element: mean, centring, square, sum of squares, scaling by 1/std, gain, bias
//                      (the per-row square root is not counted)
//   attention          the Q, K, V and output projections as linear layers with biases; scaling q by
//                      1/sqrt(d/heads) 1 per element; scores Q K^T 2 * Lq * Lk * d; a mask add of
//                      heads * Lq * Lk; softmax over heads * Lq * Lk scores; weights times V 2 * Lq * Lk * d.
//                      A causal mask still counts the full Lq x Lk scores, since they are all computed.
// The loss (cross-entropy, CTC) is not part of a model's forward FLOPs, as for the image classifiers.

int64_t linear(int64_t rows, int64_t in_features, int64_t out_features, bool bias);
int64_t conv2d(int64_t output_elements, int64_t in_channels, int64_t kernel_height, int64_t kernel_width,
               bool bias);
int64_t softmax(int64_t elements);
int64_t layer_norm(int64_t elements);

enum class RecurrentCell { kLstm, kGru };

// A recurrent layer's FLOPs, split so that the matrix products can be checked against the weights.
struct RecurrentFlops {
  int64_t matmul = 0;
  // Biases, adding the input and hidden products, gate activations and the state update.
  int64_t pointwise = 0;
  int64_t total() const { return matmul + pointwise; }
};

// One layer over `steps` time steps, in each of `directions` (1, or 2 when bidirectional); the two
// directions' outputs are left apart, as PyTorch concatenates them.
RecurrentFlops recurrent_layer(RecurrentCell cell, int64_t steps, int64_t input_size, int64_t hidden_size,
                               int64_t directions);

// Multi-head attention of `query_length` queries over `key_length` keys and values, all of width
// `model_dim`, as PyTorch's MultiheadAttention computes it.
int64_t multi_head_attention(int64_t query_length, int64_t key_length, int64_t model_dim, int64_t heads,
                             bool masked);

struct TransformerDims {
  int64_t model = 512;
  int64_t heads = 8;
  int64_t feed_forward = 2048;
};

// PyTorch's post-norm layers, ReLU feed-forward: attention, residual add, layer norm (twice in the
// encoder layer, three times in the decoder layer, whose self-attention is causally masked).
int64_t transformer_encoder_layer(int64_t length, const TransformerDims& dims);
int64_t transformer_decoder_layer(int64_t target_length, int64_t source_length, const TransformerDims& dims);

}  // namespace batchscope::models::flops
