#pragma once

#include <cstdint>
#include <string>

#include "models/registry.h"

namespace batchscope::models {

// The sequence models of the accelerator evaluations, each a complete ModelSpec (builder, FLOP count,
// synthetic batch). Their inputs are sequences: the sequence length is the entry sequence_axis of the
// sample shape, and the batch dimension comes first as for every model.

// Word-level LSTM language model as in PyTorch's word_language_model example, large configuration:
// embedding 1500, 2 LSTM layers of 1500, dropout 0.65, decoder to the vocabulary (10,000 words, as
// Penn Treebank). Sample: [35] token ids (the example's bptt); inputs and next-token targets are both
// [batch, sequence] int64, the output [sequence, batch, vocabulary] logits.
ModelSpec lstm_lm_spec();

// Transformer base (Vaswani et al. 2017) for translation: 6 encoder and 6 decoder layers, d_model 512,
// 8 heads, feed-forward 2048, dropout 0.1, sinusoidal positions, one embedding shared by source, target
// and the output projection (37,000 tokens by default). Sample: [sequence length], 128 by default; a
// batch's inputs are [batch, 2, sequence] int64 (source, then the decoder's input), its targets
// [batch, sequence], the output [sequence, batch, vocabulary] logits. Built for one length, it takes
// sequences up to that length.
ModelSpec transformer_spec();

// Deep Speech 2 (Amodei et al. 2016) as deepspeech.pytorch builds it: two 2D convolutions over a
// spectrogram, 5 bidirectional recurrent layers of 1024 (LSTM, or GRU as in the paper), a linear
// layer to 29 character labels, CTC loss. Sample: [1, 161 frequency bins, frames], 500 frames (5 s)
// by default; the output is [(frames + 1) / 2, batch, labels] logits, the targets [batch, label count] int64.
ModelSpec deepspeech2_spec(bool gru);

// Throws std::invalid_argument with a sentence naming `model` unless `input` is [sequence length >= 1]
// and there are at least 2 tokens; the fixes suggest `default_length` and `vocabulary_hint`.
void check_token_input(const std::string& model, const SampleShape& input, int64_t classes,
                       int64_t default_length, const std::string& vocabulary_hint);

// The language and translation models' loss: cross-entropy of every position's [sequence, batch,
// vocabulary] logits against the [batch, sequence] target tokens.
torch::Tensor per_token_cross_entropy(const torch::Tensor& output, const torch::Tensor& targets);

}  // namespace batchscope::models
