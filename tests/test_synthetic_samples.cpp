#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "lib/timing/synthetic_samples.h"
#include "models/registry.h"

namespace batchscope {
namespace {

using models::Batch;

// The image classifiers' synthetic batches, counting how many samples were made.
struct CountingSpec {
  models::ModelSpec spec = *models::find_model("mnist_cnn");
  int64_t samples_made = 0;
  CountingSpec() {
    spec.synthetic_batch = [this](int64_t batch, const models::SampleShape& input, int64_t classes) {
      samples_made += batch;
      return models::image_batch(batch, input, classes);
    };
  }
};

const torch::TensorOptions kCpuOptions = torch::TensorOptions().device(torch::kCPU);

void expect_same(const Batch& a, const Batch& b) {
  EXPECT_TRUE(torch::equal(a.inputs, b.inputs));
  EXPECT_TRUE(torch::equal(a.targets, b.targets));
}

Batch prefix(const Batch& b, int64_t count) {
  return {b.inputs.narrow(0, 0, count), b.targets.narrow(0, 0, count)};
}

TEST(SyntheticSamples, ABatchIsTheStreamsFirstSamplesWhateverRanBefore) {
  for (const int64_t keep : {SyntheticSamples::kKeptBytes, int64_t{0}}) {
    CountingSpec counting;
    SyntheticSamples ascending(counting.spec, {1, 28, 28}, 10, 7, keep);
    const Batch five = ascending.first(5, kCpuOptions);
    const Batch forty = ascending.first(40, kCpuOptions);
    ASSERT_EQ(forty.inputs.sizes(), (std::vector<int64_t>{40, 1, 28, 28}));
    ASSERT_EQ(forty.targets.sizes(), (std::vector<int64_t>{40}));
    expect_same(five, prefix(forty, 5));

    SyntheticSamples descending(counting.spec, {1, 28, 28}, 10, 7, keep);
    expect_same(descending.first(40, kCpuOptions), forty);
    expect_same(descending.first(5, kCpuOptions), five);
    // Blocks do not repeat: samples 16..31 are not samples 0..15 again.
    EXPECT_FALSE(torch::equal(forty.inputs.narrow(0, 0, 16), forty.inputs.narrow(0, 16, 16)));

    SyntheticSamples other_seed(counting.spec, {1, 28, 28}, 10, 8, keep);
    EXPECT_FALSE(torch::equal(other_seed.first(5, kCpuOptions).inputs, five.inputs));
  }
  // Kept or not, the same data: a GPU (which keeps them) and the CPU (which does not) see the same.
  CountingSpec counting;
  SyntheticSamples kept(counting.spec, {1, 28, 28}, 10, 3, SyntheticSamples::kKeptBytes),
      made_anew(counting.spec, {1, 28, 28}, 10, 3, 0);
  expect_same(kept.first(37, kCpuOptions), made_anew.first(37, kCpuOptions));
}

TEST(SyntheticSamples, KeptBlocksAreMadeOnceAndOthersForEachBatch) {
  CountingSpec kept_spec, anew_spec;
  SyntheticSamples kept(kept_spec.spec, {1, 28, 28}, 10, 0, SyntheticSamples::kKeptBytes);
  SyntheticSamples anew(anew_spec.spec, {1, 28, 28}, 10, 0, 0);
  constexpr int64_t block = SyntheticSamples::kBlockSamples;
  for (int64_t b = 1; b <= 70; ++b) {
    kept.first(b, kCpuOptions);
    anew.first(b, kCpuOptions);
  }
  const int64_t blocks_for_70 = (70 + block - 1) / block;
  EXPECT_EQ(kept.blocks_made(), blocks_for_70);
  EXPECT_EQ(kept_spec.samples_made, blocks_for_70 * block);
  int64_t anew_blocks = 0;
  for (int64_t b = 1; b <= 70; ++b) anew_blocks += (b + block - 1) / block;
  EXPECT_EQ(anew.blocks_made(), anew_blocks);
  EXPECT_EQ(anew_spec.samples_made, anew_blocks * block);
}

TEST(SyntheticSamples, KeptBlocksStayWithinTheirMemoryAndTheRestAreMadeAnew) {
  // mnist_cnn's block: 16 images of 1x28x28 in fp32 and 16 int64 labels.
  constexpr int64_t block_bytes = 16 * 28 * 28 * 4 + 16 * 8;
  CountingSpec counting, reference_spec;
  SyntheticSamples bounded(counting.spec, {1, 28, 28}, 10, 5, 2 * block_bytes + 1);
  SyntheticSamples reference(reference_spec.spec, {1, 28, 28}, 10, 5, 0);
  expect_same(bounded.first(70, kCpuOptions), reference.first(70, kCpuOptions));
  EXPECT_EQ(bounded.blocks_made(), 5);
  EXPECT_EQ(bounded.kept_bytes(), 2 * block_bytes);
  // The two kept blocks serve again; the three beyond are made anew, with the same samples.
  expect_same(bounded.first(70, kCpuOptions), reference.first(70, kCpuOptions));
  EXPECT_EQ(bounded.blocks_made(), 5 + 3);
  expect_same(bounded.first(32, kCpuOptions), reference.first(32, kCpuOptions));
  EXPECT_EQ(bounded.blocks_made(), 8);
  EXPECT_EQ(bounded.kept_bytes(), 2 * block_bytes);
  // The default keeps a sweep's worth of images: 1..70 at 3x224x224 is 5 blocks, 48 MB.
  EXPECT_GE(SyntheticSamples::kKeptBytes, 5 * 16 * 3 * 224 * 224 * 4);
}

TEST(SyntheticSamples, EmptyBatchesAndSequenceBatchesKeepTheirShapes) {
  CountingSpec counting;
  SyntheticSamples images(counting.spec, {1, 28, 28}, 10, 0, SyntheticSamples::kKeptBytes);
  const Batch none = images.first(0, kCpuOptions);
  EXPECT_EQ(none.inputs.sizes(), (std::vector<int64_t>{0, 1, 28, 28}));
  EXPECT_EQ(none.targets.sizes(), (std::vector<int64_t>{0}));
  EXPECT_EQ(none.targets.scalar_type(), torch::kLong);

  // Deep Speech 2: spectrograms and label sequences, both with their samples first.
  const models::ModelSpec& speech = *models::find_model("deepspeech2");
  SyntheticSamples spectrograms(speech, {1, 161, 50}, 29, 0, SyntheticSamples::kKeptBytes);
  const Batch twenty = spectrograms.first(20, kCpuOptions);
  const Batch three = spectrograms.first(3, kCpuOptions);
  EXPECT_EQ(twenty.inputs.sizes(), (std::vector<int64_t>{20, 1, 161, 50}));
  EXPECT_EQ(twenty.targets.size(0), 20);
  EXPECT_EQ(twenty.targets.scalar_type(), torch::kLong);
  expect_same(three, prefix(twenty, 3));
  const Batch tokens =
      SyntheticSamples(*models::find_model("lstm_lm"), {35}, 100, 0, 0).first(17, kCpuOptions);
  EXPECT_EQ(tokens.inputs.sizes(), (std::vector<int64_t>{17, 35}));
  EXPECT_LT(tokens.inputs.max().item<int64_t>(), 100);
}

}  // namespace
}  // namespace batchscope
