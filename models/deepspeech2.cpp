#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "models/flop_tally.h"
#include "models/layer_scope.h"
#include "models/sequence_flops.h"
#include "models/sequence_models.h"

namespace batchscope::models {
namespace {

// 20 ms windows at 16 kHz make a 320-point FFT, whose one-sided spectrum has 161 bins; frames advance
// by 10 ms, so 500 frames are 5 s of audio: a short utterance (LibriSpeech's average some 12 s) that
// keeps a sweep's large batches within one GPU.
constexpr int64_t kFrequencyBins = 161;
constexpr int64_t kFrames = 500;
// The CTC blank, 26 letters, apostrophe and space.
constexpr int64_t kLabels = 29;
constexpr int64_t kConvChannels = 32;
constexpr int64_t kDs2Hidden = 1024;
constexpr int64_t kRecurrentLayers = 5;
constexpr double kHardtanhMax = 20;
// Speech runs at some 15 characters per second and the front end leaves 50 frames per second.
constexpr double kLabelsPerFrame = 0.3;

// The front end, as a table: kernels, strides and paddings are (frequency, time).
struct ConvStage {
  int64_t kernel[2];
  int64_t stride[2];
  int64_t padding[2];
};
constexpr ConvStage kConvStages[] = {
    {{41, 11}, {2, 2}, {20, 5}},
    {{21, 11}, {2, 1}, {10, 5}},
};

// Frequency bins and frames after the convolutions of the front end.
struct FrontEndOutput {
  int64_t bins;
  int64_t frames;
};

int64_t conv_output(int64_t side, const ConvStage& stage, int axis) {
  const int64_t span = side + 2 * stage.padding[axis] - stage.kernel[axis];
  return span < 0 ? 0 : span / stage.stride[axis] + 1;
}

FrontEndOutput front_end_output(int64_t bins, int64_t frames) {
  for (const ConvStage& stage : kConvStages) {
    bins = conv_output(bins, stage, 0);
    frames = conv_output(frames, stage, 1);
  }
  return {bins, frames};
}

void check_ds2_request(const std::string& model, const SampleShape& input, int64_t classes) {
  const std::string fix = "; give input: [1, 161, 500] (1 channel, 161 frequency bins, 500 frames).";
  if (input.size() != 3) {
    throw std::invalid_argument(model + " takes spectrograms shaped [1, frequency bins, frames], got a " +
                                std::to_string(input.size()) + "-dimensional sample shape '" +
                                shape_text(input) + "'" + fix);
  }
  if (input[0] != 1 || input[1] < 1 || input[2] < 1) {
    throw std::invalid_argument(model + " takes one channel and at least 1 frequency bin and 1 frame, got '" +
                                shape_text(input) + "'" + fix);
  }
  const FrontEndOutput out = front_end_output(input[1], input[2]);
  if (out.bins < 1 || out.frames < 1) {
    throw std::invalid_argument(model + " cannot take a spectrogram of '" + shape_text(input) +
                                "': its convolutions would leave no frequency bins or frames" + fix);
  }
  if (classes < 2) {
    throw std::invalid_argument(
        model + " needs at least 2 labels (the CTC blank and a character), got classes: " +
        std::to_string(classes) + "; give classes: 29 (blank, letters, ' and space).");
  }
}

// A Sequential with a plain forward, so that AnyModule can hold it.
class ChainImpl : public torch::nn::SequentialImpl {
 public:
  using SequentialImpl::SequentialImpl;
  torch::Tensor forward(const torch::Tensor& x) { return SequentialImpl::forward(x); }
};
TORCH_MODULE(Chain);

// Applies a module to a [time, batch, features] sequence as one [time * batch, features] batch, under
// the name "module" as deepspeech.pytorch's SequenceWise.
class SequenceWiseImpl : public torch::nn::Module {
 public:
  explicit SequenceWiseImpl(torch::nn::AnyModule module) : module_(std::move(module)) {
    register_module("module", module_.ptr());
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t time = x.size(0);
    const int64_t batch = x.size(1);
    return module_.forward<torch::Tensor>(x.reshape({time * batch, -1})).view({time, batch, -1});
  }

 private:
  torch::nn::AnyModule module_;
};
TORCH_MODULE(SequenceWise);

// The convolutional front end under deepspeech.pytorch's module names (MaskConv's seq_module). Its
// padding mask is left out: every sample of a batch has the full length.
class ConvFrontEndImpl : public torch::nn::Module {
 public:
  ConvFrontEndImpl() : seq_module_(register_module("seq_module", torch::nn::Sequential())) {
    int64_t in_channels = 1;
    for (const ConvStage& stage : kConvStages) {
      seq_module_->push_back(torch::nn::Conv2d(
          torch::nn::Conv2dOptions(in_channels, kConvChannels, {stage.kernel[0], stage.kernel[1]})
              .stride({stage.stride[0], stage.stride[1]})
              .padding({stage.padding[0], stage.padding[1]})));
      seq_module_->push_back(torch::nn::BatchNorm2d(kConvChannels));
      seq_module_->push_back(
          torch::nn::Hardtanh(torch::nn::HardtanhOptions().min_val(0).max_val(kHardtanhMax).inplace(true)));
      in_channels = kConvChannels;
    }
  }

  torch::Tensor forward(const torch::Tensor& x) { return seq_module_->forward(x); }

 private:
  torch::nn::Sequential seq_module_;
};
TORCH_MODULE(ConvFrontEnd);

// A bidirectional LSTM or GRU whose two directions are summed, after a sequence-wise batch norm when
// asked (deepspeech.pytorch's BatchRNN).
class BatchRnnImpl : public torch::nn::Module {
 public:
  BatchRnnImpl(int64_t input_size, int64_t hidden_size, bool gru, bool batch_norm) {
    if (batch_norm) {
      batch_norm_ = register_module("batch_norm",
                                    SequenceWise(torch::nn::AnyModule(torch::nn::BatchNorm1d(input_size))));
    }
    if (gru) {
      gru_ = register_module(
          "rnn", torch::nn::GRU(torch::nn::GRUOptions(input_size, hidden_size).bidirectional(true)));
    } else {
      lstm_ = register_module(
          "rnn", torch::nn::LSTM(torch::nn::LSTMOptions(input_size, hidden_size).bidirectional(true)));
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    if (batch_norm_) x = batch_norm_(x);
    x = gru_ ? std::get<0>(gru_->forward(x)) : std::get<0>(lstm_->forward(x));
    return x.view({x.size(0), x.size(1), 2, -1}).sum(2);
  }

 private:
  SequenceWise batch_norm_{nullptr};
  torch::nn::LSTM lstm_{nullptr};
  torch::nn::GRU gru_{nullptr};
};
TORCH_MODULE(BatchRnn);

class DeepSpeech2 : public Network {
 public:
  DeepSpeech2(int64_t frequency_bins, int64_t labels, bool gru)
      : conv_(register_module("conv", ConvFrontEnd())),
        rnns_(register_module("rnns", torch::nn::Sequential())),
        fc_(register_module("fc", torch::nn::Sequential())) {
    const int64_t rnn_input = kConvChannels * front_end_output(frequency_bins, 1).bins;
    for (int64_t layer = 0; layer < kRecurrentLayers; ++layer) {
      rnns_->push_back(
          BatchRnn(layer == 0 ? rnn_input : kDs2Hidden, kDs2Hidden, gru, /*batch_norm=*/layer > 0));
    }
    fc_->push_back(SequenceWise(torch::nn::AnyModule(
        Chain(torch::nn::BatchNorm1d(kDs2Hidden),
              torch::nn::Linear(torch::nn::LinearOptions(kDs2Hidden, labels).bias(false))))));
  }

  // [batch, 1, frequency bins, frames] spectrograms to [output frames, batch, labels] logits.
  torch::Tensor forward(torch::Tensor input) override {
    TORCH_CHECK(input.dim() == 4, "Deep Speech 2 expects [batch, 1, bins, frames] spectrograms, got ",
                input.sizes());
    torch::Tensor x;
    {
      LayerScope scope("conv");
      x = conv_(input);
      x = x.reshape({x.size(0), x.size(1) * x.size(2), x.size(3)}).permute({2, 0, 1}).contiguous();
    }
    {
      LayerScope scope("rnns");
      x = rnns_->forward(x);
    }
    LayerScope scope("fc");
    return fc_->forward(x);
  }

  // CTC with blank 0 over every output frame, targets [batch, labels] all of one length, averaged over
  // the target lengths and then the batch.
  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets) override {
    const auto lengths = torch::TensorOptions().dtype(torch::kLong);
    const int64_t batch = output.size(1);
    return torch::nn::functional::ctc_loss(
        output.log_softmax(2), targets, torch::full({batch}, output.size(0), lengths),
        torch::full({batch}, targets.size(1), lengths),
        torch::nn::functional::CTCLossFuncOptions().blank(0).reduction(torch::kMean));
  }

 private:
  ConvFrontEnd conv_;
  torch::nn::Sequential rnns_;
  torch::nn::Sequential fc_;
};

double ds2_forward_flops(const std::string& model, bool gru, const SampleShape& input, int64_t labels) {
  check_ds2_request(model, input, labels);
  int64_t total = 0;
  int64_t channels = 1;
  int64_t bins = input[1];
  int64_t frames = input[2];
  for (const ConvStage& stage : kConvStages) {
    bins = conv_output(bins, stage, 0);
    frames = conv_output(frames, stage, 1);
    const int64_t elements = kConvChannels * bins * frames;
    // Convolution, batch norm and hardtanh.
    total +=
        flops::conv2d(elements, channels, stage.kernel[0], stage.kernel[1], true) + 2 * elements + elements;
    channels = kConvChannels;
  }
  const flops::RecurrentCell cell = gru ? flops::RecurrentCell::kGru : flops::RecurrentCell::kLstm;
  for (int64_t layer = 0; layer < kRecurrentLayers; ++layer) {
    const int64_t layer_input = layer == 0 ? kConvChannels * bins : kDs2Hidden;
    if (layer > 0) total += 2 * frames * layer_input;
    // Both directions, then their sum.
    total += flops::recurrent_layer(cell, frames, layer_input, kDs2Hidden, 2).total() + frames * kDs2Hidden;
  }
  total += 2 * frames * kDs2Hidden + flops::linear(frames, kDs2Hidden, labels, false);
  return static_cast<double>(total);
}

// The data gradient of the first convolution, which takes the spectrogram itself: a training step skips it.
double ds2_data_gradient_flops(const std::string& model, const SampleShape& input, int64_t labels) {
  check_ds2_request(model, input, labels);
  const ConvStage& first = kConvStages[0];
  const int64_t elements = kConvChannels * conv_output(input[1], first, 0) * conv_output(input[2], first, 1);
  return static_cast<double>(flops::conv2d(elements, 1, first.kernel[0], first.kernel[1], false));
}

// Standard normal spectrograms, and random characters (never the blank) at kLabelsPerFrame of the
// output frames, which CTC can always align even when every label repeats.
Batch speech_batch(const std::string& model, int64_t batch, const SampleShape& input, int64_t labels) {
  check_ds2_request(model, input, labels);
  const int64_t frames = front_end_output(input[1], input[2]).frames;
  const int64_t length = std::max<int64_t>(1, std::lround(kLabelsPerFrame * static_cast<double>(frames)));
  return {torch::randn({batch, input[0], input[1], input[2]}),
          torch::randint(1, labels, {batch, length}, torch::TensorOptions().dtype(torch::kLong))};
}

}  // namespace

ModelSpec deepspeech2_spec(bool gru) {
  ModelSpec spec;
  spec.name = gru ? "deepspeech2_gru" : "deepspeech2";
  const std::string rnn = gru ? "GRU" : "LSTM";
  spec.summary = "Deep Speech 2, deepspeech.pytorch: 2 conv + 5 bidirectional " + rnn + " of 1024, CTC";
  spec.default_input = {1, kFrequencyBins, kFrames};
  spec.default_classes = kLabels;
  spec.input_kind = InputKind::Spectrogram;
  spec.sequence_axis = 2;
  spec.input_layout = "1 x frequency bins x frames";
  // deepspeech.pytorch's DeepSpeech (bidirectional, hidden 1024, 5 layers, 161 bins, 29 labels) in PyTorch:
  // tests/integration/reference_parameters.py.
  spec.reference_parameters = gru ? 65036576 : 86618400;
  spec.reference = "SeanNaren/deepspeech.pytorch DeepSpeech, bidirectional " + rnn +
                   ", 161 bins, 29 labels (" + (gru ? "65.0M)" : "86.6M)");
  const std::string name = spec.name;
  spec.build = [name, gru](const SampleShape& input, int64_t classes) -> std::shared_ptr<Network> {
    check_ds2_request(name, input, classes);
    return std::make_shared<DeepSpeech2>(input[1], classes, gru);
  };
  spec.forward_flops = [name, gru](const SampleShape& input, int64_t classes) {
    return ds2_forward_flops(name, gru, input, classes);
  };
  spec.data_gradient_flops = [name](const SampleShape& input, int64_t classes) {
    return ds2_data_gradient_flops(name, input, classes);
  };
  spec.synthetic_batch = [name](int64_t batch, const SampleShape& input, int64_t classes) {
    return speech_batch(name, batch, input, classes);
  };
  return spec;
}

}  // namespace batchscope::models
