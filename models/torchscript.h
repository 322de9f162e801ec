#pragma once

#include <string>

#include "models/registry.h"

namespace batchscope::models {

// The model of a TorchScript file: a module whose forward takes one float tensor [batch, ...input] and
// returns [batch, classes] logits, trained with cross-entropy against synthetic class indices (or a
// dataset's labels) like the zoo's image classifiers. Read once per process and path; every build is a
// deep copy of the file's module, with the file's weights.
//
// What the zoo's models know from their layer tables is measured on one sample on the CPU instead, once
// per input shape: the class count (the output's second size), the forward FLOPs (of the convolutions
// and matrix products LibTorch runs, a multiply-add as 2; biases, element-wise operators, normalisation,
// pooling and fused attention not counted), and whether training needs a batch of 2 (a batch norm that
// sees one value per channel).
//
// Throws std::invalid_argument with a sentence where the file is missing, unreadable or not TorchScript.
const ModelSpec& torchscript_model(const std::string& path);

}  // namespace batchscope::models
