#include "lib/timing/synthetic_samples.h"

#include <algorithm>
#include <utility>

namespace batchscope {
namespace {

// splitmix64's finaliser: blocks of nearby seeds get unrelated streams.
uint64_t mixed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

torch::Tensor batch_of(const torch::Tensor& block, int64_t count, const torch::TensorOptions& where) {
  std::vector<int64_t> shape = block.sizes().vec();
  shape[0] = count;
  return torch::empty(shape, where.dtype(block.scalar_type()));
}

}  // namespace

SyntheticSamples::SyntheticSamples(const models::ModelSpec& spec, models::SampleShape input, int64_t classes,
                                   uint64_t seed, int64_t keep_bytes)
    : spec_(spec), input_(std::move(input)), classes_(classes), seed_(seed), keep_bytes_(keep_bytes) {}

models::Batch SyntheticSamples::block(int64_t index) {
  if (index < static_cast<int64_t>(blocks_.size())) return blocks_[static_cast<std::size_t>(index)];
  torch::manual_seed(mixed(seed_ ^ mixed(static_cast<uint64_t>(index))));
  models::Batch made = spec_.synthetic_batch(kBlockSamples, input_, classes_);
  ++blocks_made_;
  TORCH_CHECK(made.inputs.size(0) == kBlockSamples && made.targets.size(0) == kBlockSamples, spec_.name,
              "'s synthetic batch does not have its samples along the first dimension");
  // first() asks for the blocks in order, so the kept ones are always the stream's first.
  const int64_t bytes = static_cast<int64_t>(made.inputs.nbytes() + made.targets.nbytes());
  if (index == static_cast<int64_t>(blocks_.size()) && kept_bytes_ + bytes <= keep_bytes_) {
    blocks_.push_back(made);
    kept_bytes_ += bytes;
  }
  return made;
}

models::Batch SyntheticSamples::first(int64_t count, const torch::TensorOptions& where) {
  TORCH_CHECK(count >= 0, "a batch of ", count, " samples");
  models::Batch out;
  const int64_t blocks = std::max<int64_t>(1, (count + kBlockSamples - 1) / kBlockSamples);
  for (int64_t j = 0; j < blocks; ++j) {
    const models::Batch made = block(j);
    if (j == 0) {
      out.inputs = batch_of(made.inputs, count, where);
      out.targets = batch_of(made.targets, count, where);
    }
    const int64_t start = j * kBlockSamples, n = std::min(kBlockSamples, count - start);
    if (n <= 0) break;
    out.inputs.narrow(0, start, n).copy_(made.inputs.narrow(0, 0, n));
    out.targets.narrow(0, start, n).copy_(made.targets.narrow(0, 0, n));
  }
  return out;
}

}  // namespace batchscope
