#include "models/registry.h"

#include <ATen/Context.h>
#include <ATen/Version.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lib/common/words.h"
#include "models/layer_plan.h"
#include "models/planned_network.h"
#include "models/sequence_models.h"
#include "models/torchscript.h"
#include "models/torchscript_fusion.h"
#include "models/zoo.h"

namespace batchscope::models {
namespace {

using PlanFor = std::function<Layer(int64_t classes)>;

bool fits(const Layer& plan, const SampleShape& input) {
  try {
    count_flops(plan, input);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// Every layer works on each spatial side alike, so the smallest square input is the smallest side.
int64_t smallest_side(const Layer& plan, int64_t channels) {
  constexpr int64_t kLargestTried = 4096;
  for (int64_t side = 1; side <= kLargestTried; ++side) {
    if (fits(plan, {channels, side, side})) return side;
  }
  return kLargestTried;
}

// Returns the forward FLOPs of one sample, which walks every layer and so checks the input fits.
int64_t checked_flops(const std::string& model, const Layer& plan, const SampleShape& input,
                      int64_t classes) {
  if (classes < 1) {
    throw std::invalid_argument(model + " needs at least one class, got " + std::to_string(classes) + ".");
  }
  if (input.size() != 3) {
    throw std::invalid_argument(model + " takes images shaped channels x height x width, got a " +
                                std::to_string(input.size()) + "-dimensional sample shape '" +
                                shape_text(input) + "'.");
  }
  for (int64_t side : input) {
    if (side < 1) {
      throw std::invalid_argument(model + " needs every input dimension to be at least 1, got " +
                                  shape_text(input) + ".");
    }
  }
  try {
    return count_flops(plan, input);
  } catch (const std::invalid_argument& error) {
    const std::string side = std::to_string(smallest_side(plan, input[0]));
    throw std::invalid_argument(model + " cannot take a " + shape_text(input) + " input (" + error.what() +
                                "); give it at least " + side + "x" + side + " pixels.");
  }
}

ModelSpec spec(std::string name, std::string summary, SampleShape default_input, int64_t default_classes,
               PlanFor plan_for, int64_t reference_parameters, std::string reference, WeightInit init) {
  ModelSpec spec;
  spec.reference_parameters = reference_parameters;
  spec.reference = std::move(reference);
  spec.name = name;
  spec.summary = std::move(summary);
  spec.default_input = std::move(default_input);
  spec.default_classes = default_classes;
  spec.build = [name, plan_for, init](const SampleShape& input, int64_t classes) -> std::shared_ptr<Network> {
    const Layer plan = plan_for(classes);
    checked_flops(name, plan, input, classes);
    auto network = std::make_shared<PlannedNetwork>(plan, input);
    initialize(*network, init);
    return network;
  };
  spec.plan = plan_for;
  spec.forward_flops = [name, plan_for](const SampleShape& input, int64_t classes) {
    return static_cast<double>(checked_flops(name, plan_for(classes), input, classes));
  };
  spec.data_gradient_flops = [name, plan_for](const SampleShape& input, int64_t classes) {
    const Layer plan = plan_for(classes);
    checked_flops(name, plan, input, classes);
    return static_cast<double>(models::data_gradient_flops(plan, input));
  };
  spec.smallest_train_batch = [name, plan_for](const SampleShape& input, int64_t classes) -> int64_t {
    const Layer plan = plan_for(classes);
    checked_flops(name, plan, input, classes);
    return smallest_norm_plane(plan, input) == 1 ? 2 : 1;
  };
  spec.synthetic_batch = image_batch;
  return spec;
}

}  // namespace

double data_gradient_flops(const ModelSpec& spec, const SampleShape& input, int64_t classes) {
  return spec.data_gradient_flops ? spec.data_gradient_flops(input, classes) : 0.0;
}

int64_t smallest_train_batch(const ModelSpec& spec, const SampleShape& input, int64_t classes) {
  return spec.smallest_train_batch ? spec.smallest_train_batch(input, classes) : 1;
}

const std::vector<ModelSpec>& all_models() {
  static const std::vector<ModelSpec> models = [] {
    const SampleShape imagenet = {3, 224, 224};
    constexpr int64_t kImagenetClasses = 1000;
    return std::vector<ModelSpec>{
        spec(
            "vgg16", "VGG-16, torchvision layout without batch norm", imagenet, kImagenetClasses,
            [](int64_t classes) { return vgg_plan(16, classes); }, 138357544, "torchvision vgg16",
            WeightInit::kKaimingFanOutSmallLinear),
        spec(
            "vgg19", "VGG-19, torchvision layout without batch norm", imagenet, kImagenetClasses,
            [](int64_t classes) { return vgg_plan(19, classes); }, 143667240, "torchvision vgg19",
            WeightInit::kKaimingFanOutSmallLinear),
        spec(
            "resnet50", "ResNet-50 v1.5, torchvision layout", imagenet, kImagenetClasses,
            [](int64_t classes) { return resnet_plan(50, classes); }, 25557032, "torchvision resnet50",
            WeightInit::kKaimingFanOut),
        spec(
            "resnet18", "ResNet-18, torchvision layout", imagenet, kImagenetClasses,
            [](int64_t classes) { return resnet_plan(18, classes); }, 11689512, "torchvision resnet18",
            WeightInit::kKaimingFanOut),
        spec("alexnet", "AlexNet, torchvision layout", imagenet, kImagenetClasses, alexnet_plan, 61100840,
             "torchvision alexnet", WeightInit::kLayerDefaults),
        spec("mobilenet", "MobileNet v1, width 1.0", imagenet, kImagenetClasses, mobilenet_v1_plan, 4231976,
             "Howard et al. 2017, Table 8 (4.2M)", WeightInit::kLayerDefaults),
        spec("mobilenet_v2", "MobileNetV2, width 1.0, torchvision layout", imagenet, kImagenetClasses,
             mobilenet_v2_plan, 3504872, "torchvision mobilenet_v2", WeightInit::kKaimingFanOutSmallLinear),
        spec("mnist_cnn", "the classic Keras MNIST convolutional network", {1, 28, 28}, 10, mnist_cnn_plan,
             1199882, "Keras mnist_cnn example", WeightInit::kLayerDefaults),
        lstm_lm_spec(),
        transformer_spec(),
        deepspeech2_spec(/*gru=*/false),
        deepspeech2_spec(/*gru=*/true),
    };
  }();
  return models;
}

void check_token_input(const std::string& model, const SampleShape& input, int64_t classes,
                       int64_t default_length, const std::string& vocabulary_hint) {
  const std::string length = std::to_string(default_length);
  if (input.size() != 1) {
    throw std::invalid_argument(model + " takes token sequences shaped [sequence length], got a " +
                                std::to_string(input.size()) + "-dimensional sample shape '" +
                                shape_text(input) + "'; give a single length such as input: [" + length +
                                "].");
  }
  if (input[0] < 1) {
    throw std::invalid_argument(model + " needs a sequence of at least 1 token, got a length of " +
                                std::to_string(input[0]) + "; give a positive length such as input: [" +
                                length + "].");
  }
  if (classes < 2) {
    throw std::invalid_argument(model + " needs a vocabulary of at least 2 tokens, got classes: " +
                                std::to_string(classes) + "; give classes: " + vocabulary_hint + ".");
  }
}

torch::Tensor per_token_cross_entropy(const torch::Tensor& output, const torch::Tensor& targets) {
  return torch::nn::functional::cross_entropy(output.reshape({-1, output.size(2)}), targets.t().reshape(-1));
}

std::string input_kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::Image:
      return "images";
    case InputKind::Tokens:
      return "token sequences";
    case InputKind::Spectrogram:
      return "spectrograms";
  }
  return "inputs";
}

Batch image_batch(int64_t batch, const SampleShape& input, int64_t classes) {
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), input.begin(), input.end());
  Batch out;
  out.inputs = torch::randn(shape);
  out.targets = torch::randint(classes, {batch}, torch::TensorOptions().dtype(torch::kLong));
  return out;
}

void avoid_known_library_faults() {
  static std::once_flag once;
  std::call_once(once, [] {
    // oneDNN 3.7.2 (Debian 13's LibTorch 2.6) ends the process with an integer division by zero in the
    // backward pass of a 1x1, stride-2 convolution to 2048 channels (ResNet-50's last downsample), at
    // any input size. LibTorch's own CPU convolutions take over where that build is linked.
    if (at::show_config().find("MKL-DNN v3.7.2") != std::string::npos) {
      at::globalContext().setUserEnabledMkldnn(false);
    }
    // LibTorch 2.6 built with LLVM (Debian 13's) compiles a TorchScript file's fused CPU graphs with it,
    // and never finishes compiling the backward of linear layers around a ReLU (an MLP): its third
    // training step, the first the graph executor optimizes, hangs. The graphs then run operator by
    // operator, as every LibTorch without LLVM runs them (models/torchscript_fusion.h).
    torch::jit::overrideCanFuseOnCPU(false);
  });
}

const ModelSpec* find_model(const std::string& name, FileInput file_input, int64_t vocab) {
  avoid_known_library_faults();
  for (const ModelSpec& model : all_models()) {
    if (model.name == name) return &model;
  }
  if (!is_model_file_name(name)) return nullptr;
  try {
    return &torchscript_model(name, file_input, vocab);
  } catch (const std::invalid_argument&) {
    return nullptr;
  }
}

std::string known_model_names() {
  std::string names;
  for (const ModelSpec& model : all_models()) names += (names.empty() ? "" : ", ") + model.name;
  return names;
}

std::string unknown_model_fix(const std::string& name) {
  std::vector<std::string> known;
  for (const ModelSpec& model : all_models()) known.push_back(model.name);
  // Nearer than 3 edits, as for a mistyped YAML key, and in any case: vgg17 and VGG16 are taken for vgg16.
  const std::string nearest = nearest_word(lowercase(name), known, 3);
  const std::string list = "known models: " + known_model_names();
  return (nearest.empty() ? "use one of the " + list : "did you mean " + nearest + " (" + list + ")") +
         ", or the path of a TorchScript file";
}

int64_t count_parameters(const torch::nn::Module& module, bool trainable_only) {
  int64_t count = 0;
  for (const torch::Tensor& parameter : module.parameters()) {
    if (!trainable_only || parameter.requires_grad()) count += parameter.numel();
  }
  return count;
}

}  // namespace batchscope::models
