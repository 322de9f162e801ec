#include "lib/training/fitting_chunk.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cstdio>
#include <optional>

#include "lib/common/errors.h"
#include "lib/common/words.h"
#include "lib/config/config.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/gpu.h"

namespace batchscope {

Json to_json(const ChunkSearch& s) {
  Json j = {{"batch", s.batch}, {"largest_fitting", s.largest_fitting}, {"chunk", s.chunk}};
  if (s.started_at > 0) {
    j["started_at"] = s.started_at;
    j["bound_from_batch"] = s.bound_from_batch;
  }
  j["tries"] = s.tries;
  j["seconds"] = s.seconds;
  j["peak_memory_bytes"] = s.peak_memory_bytes ? Json(*s.peak_memory_bytes) : Json();
  j["held_bytes"] = s.held_bytes;
  j["margin"] = s.margin;
  if (s.cpu_memory_limit) j["cpu_memory_limit"] = *s.cpu_memory_limit;
  return j;
}

ChunkSearch search_fitting_chunk(const TrainingOptions& o, const std::string& device_name,
                                 const data::DatasetKind& kind) {
  const torch::Device device(device_name);
  // The run's training step, as a sweep's experiment of it.
  ExperimentConfig e;
  e.name = "train";
  e.model = o.model;
  e.input_shape = kind.image;
  e.classes = kind.classes;
  e.phase = Phase::Train;
  e.optimizer = o.optimizer;  // unset foreach: multi-tensor on a GPU, as make_optimizer and the run decide
  e.precision = o.precision;
  e.loss_scale = o.loss_scale;
  e.loss_scaler = o.loss_scaler;
  e.channels_last = o.channels_last;
  e.device = device_name;
  e.seed = o.seed;

  // No micro-batch larger than what fitted beside a smaller batch fits beside this one.
  const bool bounded = o.chunk_fits > 0 && o.chunk_fits < o.batch_size;
  MaxBatchOptions search;
  search.start = bounded ? o.chunk_fits : o.batch_size;
  search.upper_bound = search.start;
  search.granularity = o.batch_size >= 64 ? 8 : 1;
  search.smallest = smallest_chunk(e, o.batch_size);  // no micro-batch that batch norm cannot train
  search.margin = kChunkSearchMargin;
  if (device.is_cpu() && !cpu_memory::limit()) {
    // What LibTorch holds already (the dataset's images) counts against the limit too.
    if (const std::optional<int64_t> available = cpu_memory::available_bytes())
      search.cpu_memory_limit = cpu_memory::current_bytes() + *available / 10 * 9;
  }
  ChunkSearch found;
  found.batch = o.batch_size;
  if (bounded) {
    found.started_at = o.chunk_fits;
    found.bound_from_batch = o.chunk_fits_batch;
  }
  MaxBatchResult result;
  {
    // The batch as a step of training holds it on the device, its images and labels.
    std::vector<int64_t> shape = {o.batch_size};
    shape.insert(shape.end(), kind.image.begin(), kind.image.end());
    const torch::Tensor images = torch::empty(shape, torch::TensorOptions().device(device));
    const torch::Tensor labels =
        torch::empty({o.batch_size}, torch::TensorOptions().device(device).dtype(torch::kLong));
    found.held_bytes = static_cast<int64_t>(images.nbytes() + labels.nbytes());
    spdlog::info(
        "--chunk auto: searching for the largest micro-batch of {}'s training step that fits on {} "
        "beside the batch of {} ({})",
        o.model, device_name, o.batch_size, format_memory_size(found.held_bytes));
    result = run_max_batch(e, device, search, [](const MaxBatchTry& t) {
      spdlog::info("--chunk auto: micro-batch {}: {} ({}, {:.2f} s)", t.batch_size,
                   t.fits ? "fits" : "out of memory", counted(t.steps, "step"), t.seconds);
    });
  }
  if (device.is_cuda()) gpu::empty_cache();
  if (!result.max_batch) {
    const std::string least = search.smallest == 1
                                  ? "one sample"
                                  : std::to_string(search.smallest) + " samples (batch norm's least)";
    throw UserError(located("command line", 0,
                            "--chunk auto: not even a micro-batch of " + least + " trains in " + device_name +
                                "'s memory beside the batch of " + std::to_string(o.batch_size) +
                                (result.error.empty() ? "" : " (" + result.error + ")"),
                            "give a smaller --batch, a smaller model, or --precision bf16"));
  }
  found.largest_fitting = *result.max_batch;
  found.chunk = even_chunk(o.batch_size, found.largest_fitting);
  found.tries = static_cast<int>(result.tries.size());
  for (const MaxBatchTry& t : result.tries) found.seconds += t.seconds;
  found.peak_memory_bytes = result.peak_memory_bytes;
  found.margin = result.margin;
  found.cpu_memory_limit = result.cpu_memory_limit;
  return found;
}

std::string describe(const ChunkSearch& s) {
  std::string how = counted(s.tries, "try", "tries");
  if (s.started_at > 0) {
    how += " from " + std::to_string(s.started_at) + ", the largest that fitted beside the batch of " +
           std::to_string(s.bound_from_batch);
  }
  char rest[80];
  std::snprintf(rest, sizeof rest, ", %.1f s, %g%% of the memory left free", s.seconds, 100 * s.margin);
  how += rest;
  if (s.chunk == 0) return "the batch of " + std::to_string(s.batch) + " fits whole (" + how + ")";
  const int64_t passes = (s.batch + s.chunk - 1) / s.chunk;
  return "the largest micro-batch that fits is " + std::to_string(s.largest_fitting) + " (" + how +
         "); each batch of " + std::to_string(s.batch) + " as " +
         counted(passes, "micro-batch", "micro-batches") + " of at most " + std::to_string(s.chunk);
}

}  // namespace batchscope
