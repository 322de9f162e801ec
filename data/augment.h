#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>

#include "data/datasets.h"

namespace batchscope::data {

// What training does to each image of a batch before the step sees it, as torchvision's RandomCrop(size,
// padding) and RandomHorizontalFlip do: a crop of the image's own size at a random place in it padded
// by `crop_padding` pixels on each side (with the value a black pixel normalises to), then a flip from
// left to right with a chance of one half. Each image draws its own.
struct Augmentation {
  int64_t crop_padding = 0;  // 0: no crop
  bool flip = false;
  bool any() const { return crop_padding > 0 || flip; }
  bool operator==(const Augmentation& other) const {
    return crop_padding == other.crop_padding && flip == other.flip;
  }
};

constexpr int64_t kMostCropPadding = 16;
constexpr int64_t kCifarCropPadding = 4;  // the usual CIFAR recipe's: RandomCrop(32, padding=4)

// "none", "flip", "crop:4", "crop:4+flip": the words parse_augmentation reads back.
std::string to_string(const Augmentation& augmentation);
// "a random 32x32 crop of the image padded by 4, then a left-right flip of half the images": for a log line.
std::string describe(const Augmentation& augmentation, const DatasetKind& kind);
// Reads none, flip, crop (a padding of 4), crop:N (N from 1 to kMostCropPadding), crop+flip and crop:N+flip;
// nullopt for anything else.
std::optional<Augmentation> parse_augmentation(const std::string& text);
// What a dataset trains with unless told otherwise: CIFAR's images a crop (padding 4) and a flip, as its
// usual recipe has them; MNIST's and Fashion-MNIST's none (a flipped digit is another shape).
Augmentation default_augmentation(const DatasetKind& kind);

// Augments batches of one dataset's images on their device. The draws come from a generator of its own,
// made anew for each epoch from the seed and the epoch's number alone, so that a run that goes on after
// an epoch draws what one that never stopped drew, and so do two devices.
class BatchAugmenter {
 public:
  BatchAugmenter(const Augmentation& augmentation, const DatasetKind& kind, uint64_t seed,
                 torch::Device device);

  void start_epoch(int64_t epoch);
  // images: [B, channels, height, width] on the augmenter's device, normalised as the dataset's; returns
  // the augmented batch, a new tensor of the same shape.
  torch::Tensor apply(const torch::Tensor& images);

 private:
  Augmentation augmentation_;
  uint64_t seed_;
  torch::Device device_;
  torch::Tensor fill_;  // per channel: a black pixel, normalised; [1, channels, 1, 1] on the device
  std::optional<torch::Generator> generator_;
};

}  // namespace batchscope::data
