#include <gtest/gtest.h>
#include <torch/torch.h>

#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "data/augment.h"
#include "data/datasets.h"

namespace batchscope::data {
namespace {

TEST(Augmentation, ReadsItsWordsAndWritesThemBack) {
  const std::vector<std::pair<std::string, Augmentation>> read = {
      {"none", {0, false}},   {"flip", {0, true}},        {"crop", {4, false}},
      {"crop:2", {2, false}}, {"crop+flip", {4, true}},   {"crop:16+flip", {16, true}},
      {"crop:1", {1, false}}, {"crop:07+flip", {7, true}}};
  for (const auto& [text, expected] : read) {
    const std::optional<Augmentation> got = parse_augmentation(text);
    ASSERT_TRUE(got.has_value()) << text;
    EXPECT_EQ(*got, expected) << text;
    EXPECT_EQ(parse_augmentation(to_string(*got)), got) << text << " -> " << to_string(*got);
  }
  EXPECT_EQ(to_string({4, true}), "crop:4+flip");
  EXPECT_EQ(to_string({0, false}), "none");
  for (const std::string bad : {"", "auto", "crop:0", "crop:17", "crop:x", "crop:", "crop:100", "flip+crop",
                                "crop:4+", "+flip", "mirror", "crop+flip+flip", "none+flip", "CROP"}) {
    EXPECT_FALSE(parse_augmentation(bad).has_value()) << "'" << bad << "'";
  }
  EXPECT_EQ(default_augmentation(dataset_kind("cifar10")), (Augmentation{4, true}));
  EXPECT_EQ(default_augmentation(dataset_kind("cifar100")), (Augmentation{4, true}));
  EXPECT_FALSE(default_augmentation(dataset_kind("mnist")).any());
  EXPECT_FALSE(default_augmentation(dataset_kind("fashion-mnist")).any());
  EXPECT_EQ(describe({4, true}, dataset_kind("cifar10")),
            "a random 32x32 crop of the image padded by 4, then a left-right flip of half the images");
}

// The test's own padding: each channel's border a black pixel as the dataset normalises it.
torch::Tensor padded_with_black(const torch::Tensor& image, const DatasetKind& kind, int64_t pad) {
  std::vector<torch::Tensor> channels;
  for (int64_t c = 0; c < image.size(0); ++c) {
    const float black = (0.0F - static_cast<float>(kind.mean[c])) / static_cast<float>(kind.deviation[c]);
    channels.push_back(torch::constant_pad_nd(image[c], {pad, pad, pad, pad}, black));
  }
  return torch::stack(channels);
}

// Every way the augmenter can have made `out` from `image`: (row offset, column offset, flipped).
std::vector<std::tuple<int64_t, int64_t, bool>> ways_made(const torch::Tensor& out,
                                                          const torch::Tensor& image, const DatasetKind& kind,
                                                          int64_t pad) {
  const torch::Tensor padded = padded_with_black(image, kind, pad);
  const int64_t height = image.size(1), width = image.size(2);
  std::vector<std::tuple<int64_t, int64_t, bool>> ways;
  for (int64_t dy = 0; dy <= 2 * pad; ++dy) {
    for (int64_t dx = 0; dx <= 2 * pad; ++dx) {
      const torch::Tensor window = padded.narrow(1, dy, height).narrow(2, dx, width);
      if (torch::equal(out, window)) ways.emplace_back(dy, dx, false);
      if (torch::equal(out, window.flip(2))) ways.emplace_back(dy, dx, true);
    }
  }
  return ways;
}

TEST(Augmentation, EachImageIsAWindowOfItselfPaddedWithBlackThenFlippedByItsOwnCoin) {
  const DatasetKind& kind = dataset_kind("cifar10");
  torch::manual_seed(1);
  const torch::Tensor images = torch::randn({64, 3, 32, 32});
  BatchAugmenter augmenter({4, true}, kind, /*seed=*/7, torch::kCPU);
  augmenter.start_epoch(1);
  const torch::Tensor out = augmenter.apply(images);
  ASSERT_EQ(out.sizes(), images.sizes());
  std::set<std::pair<int64_t, int64_t>> offsets;
  int flipped = 0, bordered = 0;
  for (int64_t i = 0; i < images.size(0); ++i) {
    const auto ways = ways_made(out[i], images[i], kind, 4);
    ASSERT_EQ(ways.size(), 1u) << "image " << i << " is no single crop and flip of itself";
    const auto [dy, dx, flip] = ways.front();
    offsets.emplace(dy, dx);
    flipped += flip ? 1 : 0;
    bordered += dy != 4 || dx != 4 ? 1 : 0;
  }
  // Each image draws its own: of 81 places, 64 images land on many; about half are flipped.
  EXPECT_GT(offsets.size(), 20u);
  EXPECT_GT(flipped, 12);
  EXPECT_LT(flipped, 52);
  EXPECT_GT(bordered, 50) << "most crops take some of the black border";
  EXPECT_TRUE(torch::equal(images, images.clone())) << "the batch itself is left as it was";
}

TEST(Augmentation, ItsDrawsDependOnTheSeedAndTheEpochAlone) {
  const DatasetKind& kind = dataset_kind("cifar100");
  torch::manual_seed(2);
  const torch::Tensor images = torch::randn({16, 3, 32, 32});
  BatchAugmenter a({4, true}, kind, 7, torch::kCPU), b({4, true}, kind, 7, torch::kCPU),
      other_seed({4, true}, kind, 8, torch::kCPU);
  a.start_epoch(3);
  b.start_epoch(3);
  other_seed.start_epoch(3);
  const torch::Tensor first = a.apply(images);
  EXPECT_TRUE(torch::equal(first, b.apply(images)));
  EXPECT_FALSE(torch::equal(first, other_seed.apply(images)));
  EXPECT_FALSE(torch::equal(first, a.apply(images))) << "the next batch of the epoch draws anew";
  torch::randn({100});  // the global generator, which seeds weights, takes no part
  a.start_epoch(3);
  EXPECT_TRUE(torch::equal(first, a.apply(images))) << "an epoch started again draws what it drew";
  a.start_epoch(4);
  EXPECT_FALSE(torch::equal(first, a.apply(images)));
}

TEST(Augmentation, NoneLeavesTheImagesAndAFlipAloneOnlyMirrorsThem) {
  const DatasetKind& kind = dataset_kind("mnist");
  torch::manual_seed(3);
  const torch::Tensor images = torch::randn({32, 1, 28, 28});
  BatchAugmenter none({0, false}, kind, 1, torch::kCPU);
  EXPECT_TRUE(torch::equal(none.apply(images), images));
  BatchAugmenter flip({0, true}, kind, 1, torch::kCPU);
  const torch::Tensor out = flip.apply(images);
  int flipped = 0;
  for (int64_t i = 0; i < images.size(0); ++i) {
    const bool same = torch::equal(out[i], images[i]), mirrored = torch::equal(out[i], images[i].flip(2));
    EXPECT_TRUE(same != mirrored) << "image " << i;
    flipped += mirrored ? 1 : 0;
  }
  EXPECT_GT(flipped, 4);
  EXPECT_LT(flipped, 28);
  // A crop of MNIST's one channel, padded by 2.
  BatchAugmenter crop({2, false}, kind, 1, torch::kCPU);
  const torch::Tensor cropped = crop.apply(images);
  for (int64_t i = 0; i < 4; ++i) {
    const auto ways = ways_made(cropped[i], images[i], kind, 2);
    ASSERT_EQ(ways.size(), 1u) << "image " << i;
    EXPECT_FALSE(std::get<2>(ways.front()));
  }
}

}  // namespace
}  // namespace batchscope::data
