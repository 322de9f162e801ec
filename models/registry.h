#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/gemm_layer.h"
#include "models/layer_plan.h"
#include "models/model_file.h"
#include "models/network.h"

namespace batchscope::models {

// The shape of one sample, without the batch dimension, e.g. {3, 224, 224}.
using SampleShape = std::vector<int64_t>;

// What one sample is: an image (channels x height x width, float), a token sequence (int64 token ids),
// or a spectrogram (1 x frequency bins x frames, float).
enum class InputKind { Image, Tokens, Spectrogram };
// "images", "token sequences", "spectrograms", for messages.
std::string input_kind_name(InputKind kind);

struct ModelSpec {
  std::string name;
  std::string summary;
  SampleShape default_input;
  // Classes of an image classifier, the vocabulary of a language or translation model, the output
  // labels (blank included) of a speech recogniser.
  int64_t default_classes = 0;
  InputKind input_kind = InputKind::Image;
  // Position in the sample shape of the sequence length (tokens, frames); -1 for models without one.
  int sequence_axis = -1;
  // How the sample shape reads, for help and messages: "channels x height x width", "sequence length".
  std::string input_layout = "channels x height x width";
  // A reference parameter count and where it comes from, shown by `batchscope models`; 0 when none.
  int64_t reference_parameters = 0;
  std::string reference;
  // Both throw std::invalid_argument with a sentence when the input shape or class count does not
  // suit the architecture (e.g. an image so small that a pooling stage would leave nothing).
  std::function<std::shared_ptr<Network>(const SampleShape& input, int64_t classes)> build;
  // Forward FLOPs for one sample (multiply and add counted as two), see models/flop_tally.h.
  std::function<double(const SampleShape& input, int64_t classes)> forward_flops;
  // The FLOPs per sample of the data's gradient through the first layer, which a training step never
  // computes (models/layer_plan.h: data_gradient_flops). Empty where the data enters through an embedding,
  // whose output needs its gradient.
  std::function<double(const SampleShape& input, int64_t classes)> data_gradient_flops;
  // The plan the network is built from, for models made of plan layers (models/layer_plan.h); empty for
  // the sequence models, which are written as modules of their own.
  std::function<Layer(int64_t classes)> plan;
  // The smallest batch a training step can take at this input: 2 where a batch norm layer would see a
  // single value per channel at batch 1 (a 1x1 activation), which it cannot normalise; else 1. Empty
  // for models whose every input trains at batch 1. Throws as forward_flops does.
  std::function<int64_t(const SampleShape& input, int64_t classes)> smallest_train_batch;
  // One synthetic batch on the host, from torch's global generator: inputs and the targets of the
  // model's loss. Images: standard normal pixels and uniform class indices. The samples are independent
  // and lie along the first dimension of both, so that blocks of them join into larger batches.
  std::function<Batch(int64_t batch, const SampleShape& input, int64_t classes)> synthetic_batch;
  // A model read from a TorchScript file (models/torchscript.h): the file, and the class count its output
  // gives at an input shape (it has no default input nor default classes). Empty for the zoo.
  std::optional<ModelFile> file;
  std::function<int64_t(const SampleShape& input)> classes_of;
  // A TorchScript file's convolution and linear layers, by module name, as its forward ran them on one
  // sample of the input (the zoo's come from its plan). Empty for the zoo.
  std::function<std::vector<GemmLayer>(const SampleShape& input)> gemm_layers_of;
};

// The synthetic batch of image classifiers.
Batch image_batch(int64_t batch, const SampleShape& input, int64_t classes);

// spec.data_gradient_flops where the model has one, else 0.
double data_gradient_flops(const ModelSpec& spec, const SampleShape& input, int64_t classes);

// spec.smallest_train_batch where the model has one, else 1.
int64_t smallest_train_batch(const ModelSpec& spec, const SampleShape& input, int64_t classes);

const std::vector<ModelSpec>& all_models();
// nullptr when no model has that name. A name that is a file's path (is_model_file_name) is read as a
// TorchScript file whose forward takes `file_input` (token ids below `vocab`, see torchscript_model);
// nullptr where it cannot be (torchscript_model says why). The first call also works around the faults of
// LibTorch builds known to end the process (avoid_known_library_faults).
const ModelSpec* find_model(const std::string& name, FileInput file_input = FileInput::Float,
                            int64_t vocab = 0);
// Once per process: where LibTorch links a oneDNN known to crash on a layer of the zoo (3.7.2, Debian 13's
// LibTorch 2.6: ResNet-50's backward), its CPU convolutions are left to LibTorch's own kernels; and
// TorchScript's CPU fuser, which hangs compiling an MLP file's backward with Debian 13's LibTorch 2.6, is
// turned off (models/torchscript_fusion.h).
void avoid_known_library_faults();
// "vgg16, vgg19, ..." for messages.
std::string known_model_names();
// What to give instead of `name`, which is no model of the zoo: "did you mean vgg16 (known models: vgg16,
// ...), or the path of a TorchScript file", the nearest known name offered where one is near.
std::string unknown_model_fix(const std::string& name);

int64_t count_parameters(const torch::nn::Module& module, bool trainable_only = true);

}  // namespace batchscope::models
