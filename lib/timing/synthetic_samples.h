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
  // The host memory kept blocks may take: 1 GiB, 1,776 images of 3x224x224 in fp32. A larger batch (a
  // maxbatch probe of thousands) makes the blocks beyond it anew each time, as the CPU does.
  static constexpr int64_t kKeptBytes = int64_t{1} << 30;

  // keep_bytes: hold the first blocks made, up to this much host memory, for the next batch sizes (0:
  // keep none); the others are dropped once copied, so that a batch costs its own memory and one block.
  SyntheticSamples(const models::ModelSpec& spec, models::SampleShape input, int64_t classes, uint64_t seed,
                   int64_t keep_bytes);

  // The first `count` samples as a batch of tensors made with `where` (a device, or pinned host
  // memory). Uses torch's global generator, which it leaves seeded for the last block it made.
  models::Batch first(int64_t count, const torch::TensorOptions& where);

  // Blocks made so far, kept or not (each block once when kept).
  int64_t blocks_made() const { return blocks_made_; }
  // Host memory the kept blocks hold.
  int64_t kept_bytes() const { return kept_bytes_; }

 private:
  models::Batch block(int64_t index);

  const models::ModelSpec& spec_;
  models::SampleShape input_;
  int64_t classes_;
  uint64_t seed_;
  int64_t keep_bytes_;
  std::vector<models::Batch> blocks_;  // the stream's first blocks
  int64_t kept_bytes_ = 0;
  int64_t blocks_made_ = 0;
};

}  // namespace batchscope
