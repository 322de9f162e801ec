#include "lib/sweep/max_batch.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>

#include "lib/device/cpu_memory.h"
#include "lib/device/gpu.h"
#include "lib/device/gpu_memory_cap.h"
#include "lib/records/jsonl.h"
#include "lib/timing/step_runner.h"

namespace batchscope {

void check_options(const MaxBatchOptions& o) {
  const auto refuse = [](const std::string& sentence) { throw std::invalid_argument(sentence); };
  if (o.start < 1) refuse("the search must start at batch size 1 or more, not " + std::to_string(o.start));
  if (o.smallest < 1) refuse("the smallest batch size must be 1 or more, not " + std::to_string(o.smallest));
  if (o.upper_bound < o.start) {
    refuse("the upper bound " + std::to_string(o.upper_bound) + " is below the start " +
           std::to_string(o.start));
  }
  if (o.search_steps < 1) refuse("each try needs 1 step or more, not " + std::to_string(o.search_steps));
  if (o.confirm_steps < 1) {
    refuse("the confirmation needs 1 step or more, not " + std::to_string(o.confirm_steps));
  }
  if (o.cpu_memory_limit && *o.cpu_memory_limit <= 0) refuse("a CPU memory limit must be more than 0 bytes");
  if (o.gpu_memory_limit && *o.gpu_memory_limit <= 0) refuse("a GPU memory limit must be more than 0 bytes");
  if (o.granularity < 1) refuse("the granularity must be 1 or more, not " + std::to_string(o.granularity));
  if (!(o.tolerance >= 0 && o.tolerance < 1)) refuse("the tolerance must be from 0% to below 100%");
  if (o.max_tries < 0 || o.max_tries == 1) refuse("the try limit must be 2 or more (or 0 for none)");
  if (!(o.margin >= 0 && o.margin <= 0.9)) refuse("the memory margin must be from 0% to 90%");
}

Json to_json(const MaxBatchResult& r) {
  Json j = {{"max_batch", optional_json(r.max_batch)},
            {"confirm_steps", r.confirm_steps},
            {"first_failure", optional_json(r.first_failure)},
            {"hit_upper_bound", r.hit_upper_bound},
            {"peak_memory_bytes", optional_json(r.peak_memory_bytes)},
            {"cpu_memory_limit_bytes", optional_json(r.cpu_memory_limit)},
            {"gpu_memory_limit_bytes", optional_json(r.gpu_memory_limit)},
            {"tries", r.tries.size()},
            {"stopped_by", r.stopped_by},
            {"margin", r.margin},
            {"earlier_tries", r.earlier_tries}};
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

Json to_json(const MaxBatchOptions& o) {
  Json j = {{"start", o.start},
            {"upper_bound", o.upper_bound},
            {"search_steps", o.search_steps},
            {"confirm_steps", o.confirm_steps},
            {"cpu_memory_limit_bytes", optional_json(o.cpu_memory_limit)},
            {"gpu_memory_limit_bytes", optional_json(o.gpu_memory_limit)},
            {"granularity", o.granularity},
            {"tolerance", o.tolerance},
            {"max_tries", o.max_tries},
            {"margin", o.margin}};
  // Only where it says something: searches recorded before it existed read as the same search.
  if (o.smallest > 1) j["smallest"] = o.smallest;
  return j;
}

MaxBatchResult find_max_batch(const BatchProbe& probe, const MaxBatchOptions& options,
                              const TryObserver& on_try, const SearchSession& session) {
  check_options(options);
  MaxBatchResult result;
  result.confirm_steps = options.confirm_steps;
  result.smallest = options.smallest;
  const auto attempt = [&](int64_t batch_size, TryStage stage, int steps) {
    MaxBatchTry t;
    const std::size_t index = result.tries.size();
    if (index < session.earlier_tries.size()) {
      // The earlier session's try in this place must be the one this search makes now.
      t = session.earlier_tries[index];
      if (t.batch_size != batch_size || t.stage != stage || t.steps != steps) {
        const auto shown = [](int64_t b, TryStage s, int n) {
          return "batch " + std::to_string(b) + " (" + to_string(s) + ", " + std::to_string(n) +
                 (n == 1 ? " step)" : " steps)");
        };
        throw EarlierTriesDiffer(index, "earlier try " + std::to_string(index + 1) + " was " +
                                            shown(t.batch_size, t.stage, t.steps) +
                                            " where this search tries " + shown(batch_size, stage, steps));
      }
      t.earlier = true;
      ++result.earlier_tries;
    } else {
      if (session.stop_requested && session.stop_requested()) {
        throw MaxBatchStopped(static_cast<int>(index), result.earlier_tries);
      }
      const auto begin = std::chrono::steady_clock::now();
      const ProbeOutcome outcome = probe(batch_size, steps);
      t.batch_size = batch_size;
      t.stage = stage;
      t.steps = steps;
      t.fits = outcome.fits;
      t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      t.peak_memory_bytes = outcome.peak_memory_bytes;
      t.error = outcome.error;
    }
    result.tries.push_back(t);
    if (on_try) on_try(t);
    if (!t.fits && (!result.first_failure || batch_size < *result.first_failure)) {
      result.first_failure = batch_size;
      result.error = t.error;
    }
    return t.fits;
  };

  const auto out_of_tries = [&] {
    return options.max_tries > 0 && static_cast<int>(result.tries.size()) >= options.max_tries;
  };
  // Below the smallest size the step runs, nothing is tried: the size under it stands in for "fits" where
  // nothing has fit yet.
  const int64_t below_smallest = options.smallest - 1;
  // Close enough to stop bisecting: why, or empty to go on.
  const auto close_enough = [&](int64_t fit, int64_t fail) -> std::string {
    if (fail - std::max(fit, below_smallest) <= 1) return "exact";
    if (fit == 0) return "";  // nothing has fit yet (a start above the answer): search on down
    if (fail - fit <= options.granularity) return "granularity";
    if (static_cast<double>(fail - fit) <= options.tolerance * static_cast<double>(fail)) return "tolerance";
    if (out_of_tries()) return "try limit";
    return "";
  };
  // `fit` ran search_steps steps (0: nothing yet); `fail` is the smallest size that did not fit.
  int64_t fit = 0;
  std::optional<int64_t> fail;
  if (options.upper_bound < options.smallest) {
    result.stopped_by = "nothing fits";
    return result;
  }
  for (int64_t b = std::max(options.start, options.smallest);;) {
    if (!attempt(b, TryStage::Grow, options.search_steps)) {
      fail = b;
      break;
    }
    fit = b;
    if (b == options.upper_bound) break;
    if (out_of_tries()) break;
    b = b > options.upper_bound / 2 ? options.upper_bound : 2 * b;
  }
  result.stopped_by = fail ? "" : fit == options.upper_bound ? "upper bound" : "try limit";
  // Halves the gap between `fit` and `fail` with tries of `steps` steps until it is close enough.
  const auto bisect = [&](TryStage stage, int steps) {
    while (fail && (result.stopped_by = close_enough(fit, *fail)).empty()) {
      // Halfway, on a multiple of the granularity where that lies strictly between the two.
      const int64_t lower = std::max(fit, below_smallest);
      int64_t middle = lower + (*fail - lower) / 2;
      if (options.granularity > 1) {
        const int64_t aligned = middle / options.granularity * options.granularity;
        if (aligned > lower) middle = aligned;
      }
      if (attempt(middle, stage, steps)) {
        fit = middle;
      } else {
        fail = middle;
      }
    }
  };
  // Earlier tries beyond the search's end were not this search's.
  const auto finished = [&]() -> MaxBatchResult& {
    if (result.tries.size() < session.earlier_tries.size()) {
      const std::size_t index = result.tries.size();
      throw EarlierTriesDiffer(index, "the search ends after " + std::to_string(index) +
                                          " tries, before earlier try " + std::to_string(index + 1) +
                                          " (batch " +
                                          std::to_string(session.earlier_tries[index].batch_size) + ")");
    }
    return result;
  };
  bisect(TryStage::Bisect, options.search_steps);
  if (fit == 0) {
    result.stopped_by = "nothing fits";
    return finished();
  }
  if (!attempt(fit, TryStage::Confirm, options.confirm_steps)) {
    // A single step fits but repeated ones do not (on a GPU, a later step's tensors no longer find room
    // among the blocks the first one left in the allocator's cache). The single-step tries near the edge
    // then say nothing about the answer, which may lie far below, so the search goes on with the
    // confirmation's steps: down from the failure in doubling strides until a size runs them (whatever
    // the try limit), then bisecting between the two. Walking down one size at a time would take as many
    // tries as the gap is wide.
    fail = fit;
    fit = 0;
    for (int64_t stride = 1; fit == 0; stride *= 2) {
      const int64_t b = std::max<int64_t>(*fail - stride, options.smallest);
      if (b == *fail) {  // the confirmation failed at the smallest size: nothing runs its steps
        result.stopped_by = "nothing fits";
        return finished();
      }
      if (attempt(b, TryStage::Confirm, options.confirm_steps)) {
        fit = b;
      } else if (b == options.smallest) {
        result.stopped_by = "nothing fits";
        return finished();
      } else {
        fail = b;
      }
    }
    bisect(TryStage::Confirm, options.confirm_steps);
  }
  result.max_batch = fit;
  for (auto t = result.tries.rbegin(); t != result.tries.rend(); ++t) {
    if (t->fits && t->stage == TryStage::Confirm && t->batch_size == fit) {
      result.peak_memory_bytes = t->peak_memory_bytes;
      break;
    }
  }
  result.hit_upper_bound = fit == options.upper_bound;
  return finished();
}

int64_t even_chunk(int64_t batch, int64_t fits) {
  if (fits >= batch) return 0;
  const int64_t passes = (batch + fits - 1) / fits;
  const int64_t even = (batch + passes - 1) / passes;
  const int64_t in_eights = (even + 7) / 8 * 8;
  return even >= 64 && in_eights <= fits ? in_eights : even;
}

ProbeOutcome probe_workload(Workload& workload, int64_t batch_size, int steps) {
  const torch::Device& device = workload.device();
  const bool count_cpu = device.is_cpu() && cpu_memory::installed();
  workload.release_batch();
  // Each try starts from an empty cache, as a training process of that size would, not among the
  // blocks an earlier size left behind.
  if (device.is_cuda()) {
    gpu::empty_cache();
    gpu::reset_peak_memory(device.index());
  }
  if (count_cpu) cpu_memory::reset_peak();
  ProbeOutcome outcome;
  try {
    workload.prepare_batch(batch_size);
    for (int i = 0; i < steps; ++i) {
      workload.stage();
      workload.step();
    }
    workload.synchronize();
    outcome.fits = true;
    if (device.is_cuda()) outcome.peak_memory_bytes = gpu::peak_memory_bytes(device.index());
    if (count_cpu) outcome.peak_memory_bytes = cpu_memory::peak_bytes();
  } catch (const std::exception& error) {
    if (!is_out_of_memory(error)) throw;
    outcome.error = short_error_message(error);
  }
  workload.release_batch();
  if (!outcome.fits && device.is_cuda()) gpu::empty_cache();
  return outcome;
}

std::optional<int64_t> default_cpu_memory_limit() {
  const std::optional<int64_t> available = cpu_memory::available_bytes();
  if (!available) return std::nullopt;
  return *available / 10 * 9;
}

MaxBatchResult run_max_batch(const ExperimentConfig& experiment, const torch::Device& device,
                             const MaxBatchOptions& asked, const TryObserver& on_try,
                             const SearchSession& session) {
  check_options(asked);
  // No try below the smallest batch the step runs at (batch norm in training).
  MaxBatchOptions options = asked;
  options.smallest = std::max(options.smallest, smallest_step_batch(experiment));
  if (options.cpu_memory_limit && !device.is_cpu()) {
    throw std::invalid_argument("a CPU memory limit does not apply to " + device.str() +
                                ", where the GPU's own memory is the limit");
  }
  if (options.gpu_memory_limit && !device.is_cuda()) {
    throw std::invalid_argument("a GPU memory limit does not apply to " + device.str());
  }
  std::optional<cpu_memory::ScopedLimit> scoped_limit;
  // The margin leaves that share of the memory free: a smaller limit on the CPU, a memory fraction
  // of the CUDA allocator (put back to the whole when the search ends).
  const auto less_margin = [&](std::optional<int64_t> limit) -> std::optional<int64_t> {
    if (!limit) return limit;
    return static_cast<int64_t>(static_cast<double>(*limit) * (1 - options.margin));
  };
  if (device.is_cpu()) {
    cpu_memory::install();
    if (options.cpu_memory_limit) {
      scoped_limit.emplace(less_margin(options.cpu_memory_limit));
    } else if (!cpu_memory::limit()) {
      scoped_limit.emplace(less_margin(default_cpu_memory_limit()));
    } else if (options.margin > 0) {
      scoped_limit.emplace(less_margin(cpu_memory::limit()));
    }
  }
  // On a GPU: the search's cap where it has one, and the margin's share of the cap (or of the whole
  // memory); the cap and the fraction before are put back when the search ends.
  struct CapBack {
    int index = -1;
    std::optional<int64_t> cap;
    ~CapBack() {
      if (index >= 0) gpu::set_memory_cap(index, cap);
    }
  } cap_back;
  std::optional<int64_t> gpu_limit_used;
  if (device.is_cuda()) {
    const int index = device.has_index() ? device.index() : 0;
    cap_back.cap = gpu::memory_cap(index);
    cap_back.index = index;
    if (options.gpu_memory_limit) gpu::set_memory_cap(index, options.gpu_memory_limit);
    if (options.margin > 0) gpu::set_share_of_cap(index, 1 - options.margin);
    gpu_limit_used = gpu::memory_cap(index);
  }
  const std::optional<int64_t> limit_used = device.is_cpu() ? cpu_memory::limit() : std::nullopt;
  at::globalContext().setBenchmarkCuDNN(experiment.cudnn_benchmark);

  // Synthetic batches of the same shape take the memory that a dataset's would, without loading it.
  ExperimentConfig synthetic = experiment;
  synthetic.data = "synthetic";
  std::unique_ptr<Workload> workload;
  try {
    workload = std::make_unique<Workload>(synthetic, device);
  } catch (const std::exception& error) {
    if (!is_out_of_memory(error)) throw;
    MaxBatchResult result;
    result.confirm_steps = options.confirm_steps;
    result.smallest = options.smallest;
    result.cpu_memory_limit = limit_used;
    result.gpu_memory_limit = gpu_limit_used;
    result.margin = options.margin;
    result.stopped_by = "nothing fits";
    result.error = "the model alone does not fit: " + short_error_message(error);
    return result;
  }
  MaxBatchResult result = find_max_batch(
      [&](int64_t batch_size, int steps) { return probe_workload(*workload, batch_size, steps); }, options,
      on_try, session);
  result.cpu_memory_limit = limit_used;
  result.gpu_memory_limit = gpu_limit_used;
  result.margin = options.margin;
  return result;
}

}  // namespace batchscope
