#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "models/zoo.h"

namespace batchscope::models {
namespace {

// Every convolution is followed by batch norm, which makes a bias redundant; "same" padding throughout.
Layer conv_bn_act(int64_t out, int64_t kernel, int64_t stride, int64_t groups, Layer activation) {
  return stack(
      {conv(out, kernel, stride, (kernel - 1) / 2, groups, false), batch_norm(), std::move(activation)});
}

// Features, then a global average pool into the classifier, as both reference models lay it out.
Layer pooled_network(std::vector<Layer> features, std::vector<Layer> classifier) {
  return stack({
      named("features", stack(std::move(features))),
      named("avgpool", adaptive_avg_pool(1, 1)),
      named("flatten", flatten()),
      named("classifier", stack(std::move(classifier))),
  });
}

// MobileNet v1: after the stem, depthwise-separable blocks given as (output channels, stride).
struct SeparableRow {
  int64_t channels;
  int64_t stride;
};
constexpr int64_t kV1StemChannels = 32;
constexpr std::array<SeparableRow, 13> kV1Rows = {{{64, 1},
                                                   {128, 2},
                                                   {128, 1},
                                                   {256, 2},
                                                   {256, 1},
                                                   {512, 2},
                                                   {512, 1},
                                                   {512, 1},
                                                   {512, 1},
                                                   {512, 1},
                                                   {512, 1},
                                                   {1024, 2},
                                                   {1024, 1}}};

// MobileNetV2: inverted residual rows (expansion t, output channels c, repeats n, first stride s).
struct InvertedRow {
  int64_t expansion;
  int64_t channels;
  int64_t repeats;
  int64_t stride;
};
constexpr std::array<InvertedRow, 7> kV2Rows = {{{1, 16, 1, 1},
                                                 {6, 24, 2, 2},
                                                 {6, 32, 3, 2},
                                                 {6, 64, 4, 2},
                                                 {6, 96, 3, 1},
                                                 {6, 160, 3, 2},
                                                 {6, 320, 1, 1}}};
constexpr double kV2Width = 1.0;
constexpr int64_t kV2StemChannels = 32;
constexpr int64_t kV2LastChannels = 1280;
constexpr double kV2Dropout = 0.2;

// Channel counts are rounded to multiples of 8, never dropping more than 10%, as in the reference.
int64_t round_channels(double channels) {
  constexpr int64_t kDivisor = 8;
  int64_t rounded = std::max(kDivisor, static_cast<int64_t>(channels + kDivisor / 2.0) / kDivisor * kDivisor);
  if (rounded < 0.9 * channels) rounded += kDivisor;
  return rounded;
}

Layer inverted_residual(int64_t in, int64_t out, int64_t stride, int64_t expansion) {
  const int64_t hidden = in * expansion;
  std::vector<Layer> layers;
  if (expansion != 1) layers.push_back(conv_bn_act(hidden, 1, 1, 1, relu6()));
  layers.push_back(conv_bn_act(hidden, 3, stride, hidden, relu6()));
  // The projection stays linear: a ReLU here would destroy information in the narrow layer.
  layers.push_back(conv(out, 1, 1, 0, 1, false));
  layers.push_back(batch_norm());
  Layer body = named("conv", stack(std::move(layers)));
  if (stride == 1 && in == out) return residual({std::move(body)}, {}, false);
  return stack({std::move(body)});
}

}  // namespace

Layer mobilenet_v1_plan(int64_t classes) {
  std::vector<Layer> features = {conv_bn_act(kV1StemChannels, 3, 2, 1, relu())};
  int64_t in = kV1StemChannels;
  for (const SeparableRow& row : kV1Rows) {
    features.push_back(
        stack({conv_bn_act(in, 3, row.stride, in, relu()), conv_bn_act(row.channels, 1, 1, 1, relu())}));
    in = row.channels;
  }
  return pooled_network(std::move(features), {linear(classes)});
}

Layer mobilenet_v2_plan(int64_t classes) {
  int64_t in = round_channels(kV2StemChannels * kV2Width);
  std::vector<Layer> features = {conv_bn_act(in, 3, 2, 1, relu6())};
  for (const InvertedRow& row : kV2Rows) {
    const int64_t out = round_channels(row.channels * kV2Width);
    for (int64_t i = 0; i < row.repeats; ++i) {
      features.push_back(inverted_residual(in, out, i == 0 ? row.stride : 1, row.expansion));
      in = out;
    }
  }
  // The last layer never shrinks below its width-1.0 size.
  features.push_back(
      conv_bn_act(round_channels(kV2LastChannels * std::max(1.0, kV2Width)), 1, 1, 1, relu6()));
  return pooled_network(std::move(features), {dropout(kV2Dropout), linear(classes)});
}

}  // namespace batchscope::models
