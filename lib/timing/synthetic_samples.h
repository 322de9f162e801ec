#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "models/network.h"
#include "models/registry.h"

namespace batchscope {

// A workload's synthetic data: one stream of samples per seed, made on the host in blocks of
// kBlockSamples, each block from a seed of its own. A batch of b samples is the stream's first b, so a
// batch size gets the same data whatever sizes ran before it and on every device. Kept blocks are made
// once per sweep, not once per batch size (1..70 at 224x224 made 2,485 images where 70 will do).
class SyntheticSamples {
 public:
  static constexpr int64_t kBlockSamples = 16;

  // keep: hold the blocks made so far for the next batch sizes (host memory for the largest batch yet);
  // otherwise each block is dropped once copied, so that a batch costs its own memory and one block.
  SyntheticSamples(const models::ModelSpec& spec, models::SampleShape input, int64_t classes, uint64_t seed,
                   bool keep);

  // The first `count` samples as a batch of tensors made with `where` (a device, or pinned host
  // memory). Uses torch's global generator, which it leaves seeded for the last block it made.
  models::Batch first(int64_t count, const torch::TensorOptions& where);

  // Blocks made so far, kept or not (each block once when kept).
  int64_t blocks_made() const { return blocks_made_; }

 private:
  models::Batch block(int64_t index);

  const models::ModelSpec& spec_;
  models::SampleShape input_;
  int64_t classes_;
  uint64_t seed_;
  bool keep_;
  std::vector<models::Batch> blocks_;
  int64_t blocks_made_ = 0;
};

}  // namespace batchscope
