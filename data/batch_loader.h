#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "data/datasets.h"

namespace batchscope::data {

struct Batch {
  torch::Tensor images;  // [B, 1, 28, 28] float32
  torch::Tensor labels;  // [B] int64
};

// Feeds batches of any size from a Dataset, in an order shuffled with the seed (a new permutation per
// epoch: seed + epoch), or in order. A batch larger than the dataset is a UserError.
// For a CUDA device the host batches are gathered into pinned memory, so that to_device() copies them
// asynchronously on LibTorch's current stream. The loader keeps a reference: the dataset must outlive it.
class BatchLoader {
 public:
  BatchLoader(const Dataset& dataset, int64_t batch_size, uint64_t seed, bool shuffle, torch::Device device,
              bool drop_last = false);

  // Starts an epoch: a fresh permutation from seed + epoch when shuffling. The constructor starts epoch 0.
  void start_epoch(int64_t epoch);
  // The next batch of the epoch on the host (pinned for a CUDA device); false at the end of the epoch.
  bool next_host_batch(Batch& out);
  // Copies a host batch to the device (non_blocking from pinned memory); the same tensors on the CPU.
  // The copy is asynchronous: work queued after it on the current stream sees the data, but a caller that
  // times steps or reads results on the host synchronises the device itself.
  Batch to_device(const Batch& host) const;
  // next_host_batch then to_device.
  bool next(Batch& out);

  int64_t batches_per_epoch() const;
  int64_t batch_size() const { return batch_size_; }
  const torch::Device& device() const { return device_; }

 private:
  const Dataset& dataset_;
  int64_t batch_size_;
  uint64_t seed_;
  bool shuffle_;
  torch::Device device_;
  bool drop_last_;
  torch::Tensor order_;
  int64_t position_ = 0;
};

}  // namespace batchscope::data
