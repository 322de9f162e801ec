#include "data/augment.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cctype>
#include <vector>

namespace batchscope::data {
namespace {

// Keeps the augmenter's draws apart from the shuffled order's, which come from seed + epoch too.
constexpr uint64_t kAugmentSeedSalt = 0x6a09e667f3bcc909ULL;

// "crop" or "crop:N" -> the padding; nullopt for anything else.
std::optional<int64_t> crop_padding(const std::string& word) {
  if (word == "crop") return kCifarCropPadding;
  const std::string prefix = "crop:";
  if (word.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string digits = word.substr(prefix.size());
  if (digits.empty() || digits.size() > 2) return std::nullopt;
  int64_t padding = 0;
  for (const char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    padding = 10 * padding + (c - '0');
  }
  if (padding < 1 || padding > kMostCropPadding) return std::nullopt;
  return padding;
}

}  // namespace

std::string to_string(const Augmentation& augmentation) {
  if (!augmentation.any()) return "none";
  std::string text;
  if (augmentation.crop_padding > 0) text = "crop:" + std::to_string(augmentation.crop_padding);
  if (augmentation.flip) text += text.empty() ? "flip" : "+flip";
  return text;
}

std::string describe(const Augmentation& augmentation, const DatasetKind& kind) {
  if (!augmentation.any()) return "none";
  std::string text;
  if (augmentation.crop_padding > 0) {
    text = "a random " + std::to_string(kind.image.at(1)) + "x" + std::to_string(kind.image.at(2)) +
           " crop of the image padded by " + std::to_string(augmentation.crop_padding);
  }
  if (augmentation.flip)
    text += std::string(text.empty() ? "" : ", then ") + "a left-right flip of half the images";
  return text;
}

std::optional<Augmentation> parse_augmentation(const std::string& text) {
  if (text == "none") return Augmentation{};
  if (text == "flip") return Augmentation{0, true};
  const std::string with_flip = "+flip";
  const bool flip = text.size() > with_flip.size() &&
                    text.compare(text.size() - with_flip.size(), with_flip.size(), with_flip) == 0;
  const std::optional<int64_t> padding =
      crop_padding(flip ? text.substr(0, text.size() - with_flip.size()) : text);
  if (!padding) return std::nullopt;
  return Augmentation{*padding, flip};
}

Augmentation default_augmentation(const DatasetKind& kind) {
  if (kind.format == DatasetKind::Format::Cifar) return Augmentation{kCifarCropPadding, true};
  return Augmentation{};
}

BatchAugmenter::BatchAugmenter(const Augmentation& augmentation, const DatasetKind& kind, uint64_t seed,
                               torch::Device device)
    : augmentation_(augmentation), seed_(seed), device_(device) {
  const auto channels = static_cast<int64_t>(kind.mean.size());
  TORCH_CHECK(channels == kind.image.at(0) && kind.deviation.size() == kind.mean.size(),
              "BatchAugmenter: the dataset's normalisation is not one per channel");
  std::vector<float> black;
  // In float, as the dataset normalises its pixels: a black pixel of the image's own, to the bit.
  for (std::size_t c = 0; c < kind.mean.size(); ++c)
    black.push_back((0.0F - static_cast<float>(kind.mean[c])) / static_cast<float>(kind.deviation[c]));
  fill_ = torch::tensor(black).view({1, channels, 1, 1}).to(device_);
  start_epoch(0);
}

void BatchAugmenter::start_epoch(int64_t epoch) {
  generator_ = at::detail::createCPUGenerator((seed_ ^ kAugmentSeedSalt) + static_cast<uint64_t>(epoch));
}

torch::Tensor BatchAugmenter::apply(const torch::Tensor& images) {
  if (!augmentation_.any()) return images;
  TORCH_CHECK(images.dim() == 4 && images.size(1) == fill_.size(1), "BatchAugmenter: not a batch of images");
  const int64_t batch = images.size(0), channels = images.size(1), height = images.size(2),
                width = images.size(3), pad = augmentation_.crop_padding;
  // Each image's rows and columns of the padded image, drawn on the host: a crop's offset (rows, then
  // columns), then the flip's coin, which reverses the crop's columns.
  const auto whole = torch::TensorOptions().dtype(torch::kLong);
  torch::Tensor rows = torch::arange(height, whole).repeat({batch, 1});
  torch::Tensor columns = torch::arange(width, whole).repeat({batch, 1});
  if (pad > 0) {
    const torch::Tensor offsets = torch::randint(0, 2 * pad + 1, {batch, 2}, *generator_, whole);
    rows += offsets.select(1, 0).unsqueeze(1);
    columns += offsets.select(1, 1).unsqueeze(1);
  }
  if (augmentation_.flip) {
    const torch::Tensor flipped = torch::randint(0, 2, {batch, 1}, *generator_, whole).to(torch::kBool);
    columns = torch::where(flipped, columns.flip(1), columns);
  }
  // To the GPU from page-locked memory, behind the batch's own copy on the same stream.
  const auto to_device = [&](const torch::Tensor& host) {
    return device_.is_cuda() ? host.pin_memory().to(device_, /*non_blocking=*/true) : host;
  };
  torch::Tensor source = images;
  if (pad > 0) {
    source = fill_.expand({batch, channels, height + 2 * pad, width + 2 * pad}).clone();
    source.narrow(2, pad, height).narrow(3, pad, width).copy_(images);
    const torch::Tensor row_index = to_device(rows).view({batch, 1, height, 1});
    source = source.gather(2, row_index.expand({batch, channels, height, width + 2 * pad}));
  }
  const torch::Tensor column_index = to_device(columns).view({batch, 1, 1, width});
  return source.gather(3, column_index.expand({batch, channels, height, width}));
}

}  // namespace batchscope::data
