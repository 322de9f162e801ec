#include "data/batch_loader.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <string>

#include "lib/common/errors.h"

namespace batchscope::data {

BatchLoader::BatchLoader(const Dataset& dataset, int64_t batch_size, uint64_t seed, bool shuffle,
                         torch::Device device, bool drop_last)
    : dataset_(dataset),
      batch_size_(batch_size),
      seed_(seed),
      shuffle_(shuffle),
      device_(device),
      drop_last_(drop_last) {
  TORCH_CHECK(dataset_.images.defined() && dataset_.labels.defined(),
              "BatchLoader: the dataset is not loaded");
  TORCH_CHECK(dataset_.images.size(0) == dataset_.size(), "BatchLoader: images and labels differ in count");
  if (batch_size_ < 1) {
    throw UserError("batch size " + std::to_string(batch_size_) +
                    " is not a batch; give a batch size of 1 or more.");
  }
  if (batch_size_ > dataset_.size()) {
    throw UserError("batch size " + std::to_string(batch_size_) + " is larger than the " +
                    std::to_string(dataset_.size()) + " images of " + dataset_.name +
                    "; give a batch size of at most " + std::to_string(dataset_.size()) + ".");
  }
  start_epoch(0);
}

void BatchLoader::start_epoch(int64_t epoch) {
  const int64_t n = dataset_.size();
  if (shuffle_) {
    // A generator of our own: the order depends only on seed + epoch, and the global RNG that seeds
    // models and synthetic data is left as it was.
    torch::Generator generator = at::detail::createCPUGenerator(seed_ + static_cast<uint64_t>(epoch));
    order_ = torch::randperm(n, generator, torch::kInt64);
  } else {
    order_ = torch::arange(n, torch::kInt64);
  }
  position_ = 0;
}

bool BatchLoader::next_host_batch(Batch& out) {
  const int64_t remaining = dataset_.size() - position_;
  if (remaining <= 0 || (drop_last_ && remaining < batch_size_)) return false;
  const int64_t count = std::min(batch_size_, remaining);
  const torch::Tensor indices = order_.narrow(0, position_, count);
  position_ += count;

  if (device_.is_cuda()) {
    // Gather straight into page-locked memory, so that to_device() can copy without blocking.
    const auto pinned = [](const torch::Tensor& source, int64_t rows) {
      std::vector<int64_t> shape = source.sizes().vec();
      shape[0] = rows;
      return torch::empty(shape, source.options().pinned_memory(true));
    };
    out.images = pinned(dataset_.images, count);
    out.labels = pinned(dataset_.labels, count);
    torch::index_select_out(out.images, dataset_.images, 0, indices);
    torch::index_select_out(out.labels, dataset_.labels, 0, indices);
  } else {
    out.images = dataset_.images.index_select(0, indices);
    out.labels = dataset_.labels.index_select(0, indices);
  }
  return true;
}

Batch BatchLoader::to_device(const Batch& host) const {
  if (device_.is_cpu()) return host;
  // From pinned memory this copy is asynchronous on the current stream: kernels queued after it on that
  // stream see the data, but a host-side timer must synchronise the device itself. The caching host
  // allocator keeps the pinned buffer alive until the copy has finished.
  return Batch{host.images.to(device_, /*non_blocking=*/true),
               host.labels.to(device_, /*non_blocking=*/true)};
}

bool BatchLoader::next(Batch& out) {
  Batch host;
  if (!next_host_batch(host)) return false;
  out = to_device(host);
  return true;
}

int64_t BatchLoader::batches_per_epoch() const {
  const int64_t n = dataset_.size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

}  // namespace batchscope::data
