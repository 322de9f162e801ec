#pragma once

#include <stdexcept>
#include <string>

#include "models/registry.h"

namespace batchscope::models {

// The model of a TorchScript file, whose forward takes a batch and returns logits, trained with
// cross-entropy:
// - FileInput::Float: a float tensor [batch, ...input] to [batch, classes] logits, against synthetic class
//   indices (or a dataset's labels), like the zoo's image classifiers;
// - FileInput::Tokens: token ids [batch, sequence] (int64) to [batch, positions, vocabulary] logits, one per
//   position, against synthetic token ids at every position, like the zoo's language models; or to
//   [batch, classes] logits, one per sequence, against synthetic classes (a sequence classifier). The
//   input is the sequence length alone (input: [S] or seq_len: S); the synthetic token ids lie below
//   `vocab`, or where it is 0 below the output's vocabulary (a sequence classifier needs a vocab). A
//   required argument after the token ids named as a mask gets ones, one named as token types zeros.
// The logits are the output, the first element of a tuple or list it returns, or a dict's "logits".
// Read once per process and path; every build is a deep copy of the file's module, with the file's weights.
//
// What the zoo's models know from their layer tables is measured on one sample on the CPU instead, once
// per input shape: the class count (the output's last size: classes, or the vocabulary), the forward
// FLOPs (of the convolutions, matrix products and scaled dot-product attentions LibTorch runs, a
// multiply-add as 2; biases, element-wise operators, normalisation and pooling not counted), and whether
// training needs a batch of 2 (a batch norm that sees one value per channel).
//
// Throws std::invalid_argument with a sentence where the file is missing, unreadable or not TorchScript.
// What a token model's spec throws where its vocab is missing (a sequence classifier's) or more than the
// module takes, so that a message can name the vocab rather than the input.
struct VocabError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

const ModelSpec& torchscript_model(const std::string& path, FileInput input = FileInput::Float,
                                   int64_t vocab = 0);

}  // namespace batchscope::models
