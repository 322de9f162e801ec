#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/records/maxbatch_records.h"
#include "lib/records/records.h"

namespace batchscope {

class Workload;

struct MaxBatchOptions {
  int64_t start = 1;            // the first size tried; the search grows from it by doubling
  // The smallest size the step can run at all (a model with batch norm trains from 2 samples, where a
  // channel's normalisation has more than one value; models::smallest_train_batch): no smaller size is
  // tried, and where it does not fit, nothing does. A start below it starts there.
  int64_t smallest = 1;
  int64_t upper_bound = 65536;  // no size above it is tried; reaching it means "at least upper_bound"
  int search_steps = 1;         // steps per try while growing and bisecting
  int confirm_steps = 3;        // steps in a row the answer must run (the safety margin)
  // A limit on LibTorch's CPU memory for the search (see cpu_memory.h); only for the CPU, where
  // nothing else stops an allocation before the kernel's OOM killer. run_max_batch refuses it on CUDA.
  // nullopt: the limit already in place, or where there is none, default_cpu_memory_limit().
  std::optional<int64_t> cpu_memory_limit;
  // A cap on a GPU's memory for the search (gpu_memory_cap.h), the one before put back after; only for
  // CUDA. nullopt: the cap in place (sweep --memory-limit), if any.
  std::optional<int64_t> gpu_memory_limit;
  // When the bisection may stop short of the exact size: once the largest size that fit and the
  // smallest that did not are at most `granularity` apart, or within `tolerance` (a share of the
  // smallest failure) of each other; 1 and 0 search to the exact size.
  int64_t granularity = 1;
  double tolerance = 0;
  // The most tries growing and bisecting may take (0: no limit); the confirmation comes after them.
  int max_tries = 0;
  // The share of the device's memory the answer leaves free (0.1: the largest size that fits in 90%):
  // the search runs with that much less memory (a smaller CPU limit, a CUDA memory fraction).
  double margin = 0;
};

// The chunk for a batch whose largest fitting micro-batch is `fits`: 0 (the batch whole) where the batch
// fits; else the batch split into as few micro-batches as fit, ceil(batch / fits), of an even size, from 64
// on rounded up to a multiple of 8 (a GPU's tensor cores take their rows in eights) where that still fits.
// The micro-batches are as many as `fits` gives, and smaller: 4096 with 1537 fitting runs as 1368, 1368 and
// 1360, not 1537, 1537 and 1022 (train --chunk auto, and a sweep's chunk: auto).
int64_t even_chunk(int64_t batch, int64_t fits);

// Checks the options; throws std::invalid_argument with a sentence.
void check_options(const MaxBatchOptions& options);

// What one try of a batch size gave. Only out-of-memory counts as "does not fit".
struct ProbeOutcome {
  bool fits = false;
  std::string error;                         // the out-of-memory message when it does not fit
  std::optional<int64_t> peak_memory_bytes;  // of the try, where the device reports it
};

struct MaxBatchResult {
  // The largest size that ran confirm_steps steps in a row; nullopt when not even the smallest fits.
  std::optional<int64_t> max_batch;
  int64_t smallest = 1;  // the smallest size the search could try (MaxBatchOptions::smallest)
  // The smallest size that ran out of memory (max_batch + 1 at the end of a search that found a
  // failure next to the answer); nullopt when nothing failed, i.e. the upper bound was reached.
  std::optional<int64_t> first_failure;
  bool hit_upper_bound = false;  // max_batch == upper_bound: the answer is "at least upper_bound"
  int confirm_steps = 0;
  std::optional<int64_t> peak_memory_bytes;  // of the confirmation at max_batch
  std::string error;  // the out-of-memory message at first_failure (when nothing fits: at size 1)
  std::optional<int64_t> cpu_memory_limit;  // the limit the search ran under (run_max_batch on the CPU)
  std::optional<int64_t> gpu_memory_limit;  // the cap on the GPU's memory it ran under, where one was set
  std::vector<MaxBatchTry> tries;           // in the order they ran
  // Why the bisection stopped: "exact" (next to a failure), "upper bound", "granularity", "tolerance",
  // "try limit", or "nothing fits".
  std::string stopped_by;
  double margin = 0;  // the share of memory the search left free
  int earlier_tries = 0;  // of `tries`, those an earlier session ran (a resumed search)
};

Json to_json(const MaxBatchResult& r);  // the tries left out: they are records of their own
// What decides the search's course, for telling whether a stopped search is the one asked for again.
Json to_json(const MaxBatchOptions& o);

// How this session of a search goes on from an earlier one, and when it stops.
struct SearchSession {
  // The tries an earlier, stopped session of the same search ran, in order: the search takes their
  // outcomes instead of running them again, as long as each is the try it would make next.
  std::vector<MaxBatchTry> earlier_tries;
  // Asked before every try that would run: true stops the search (MaxBatchStopped) between two tries.
  std::function<bool()> stop_requested;
};

// The search was asked to stop; every try it ran had been reported.
class MaxBatchStopped : public std::runtime_error {
 public:
  MaxBatchStopped(int tries, int earlier_tries)
      : std::runtime_error("the search was stopped"), tries(tries), earlier_tries(earlier_tries) {}
  int tries;          // in all, the earlier session's included
  int earlier_tries;  // of them, read back from the earlier session
};

// An earlier session's tries are not the ones this search makes: another version of the search, or
// other options, wrote them. `index` is the first that differs (0-based).
class EarlierTriesDiffer : public std::runtime_error {
 public:
  EarlierTriesDiffer(std::size_t index, const std::string& what) : std::runtime_error(what), index(index) {}
  std::size_t index;
};

using BatchProbe = std::function<ProbeOutcome(int64_t batch_size, int steps)>;
using TryObserver = std::function<void(const MaxBatchTry&)>;

// The largest batch size that fits, found with the probe alone. Grows from options.start by doubling
// until a size does not fit or upper_bound is reached (tried last when doubling would overshoot it),
// bisects between the last size that fit and the first that did not, then runs confirm_steps steps at
// the answer. When that fails the search goes on below it with confirm_steps steps a try, down in doubling
// strides until a size runs them, then bisecting, so the answer always passed confirmation and the search
// takes logarithmically many tries however far below the single-step answer it lies.
// Every try is reported to on_try (which may be empty) as it ends, an earlier session's included (their
// `earlier` set). What the probe throws propagates: a probe reports out-of-memory as a ProbeOutcome and
// lets every other error through. The course of the search depends on the options and the outcomes
// alone, so a stopped search given its tries back (session.earlier_tries) goes on as if never stopped.
MaxBatchResult find_max_batch(const BatchProbe& probe, const MaxBatchOptions& options,
                              const TryObserver& on_try, const SearchSession& session = {});

// Tries a batch size on a workload: prepares the batch, runs `steps` steps and waits for the device.
// Out-of-memory is caught and the memory released (the batch dropped, and on CUDA the cache emptied);
// any other error propagates. The peak memory comes from the GPU, or on the CPU from the counting
// allocator where it is installed.
ProbeOutcome probe_workload(Workload& workload, int64_t batch_size, int steps);

// 90% of the memory available now (cpu_memory::available_bytes), leaving room for what the count misses;
// nullopt where that cannot be read.
std::optional<int64_t> default_cpu_memory_limit();

// Builds the experiment's workload on the device (already resolved: "cpu" or "cuda:N") and searches.
// On the CPU the counting allocator is installed and the search runs under a limit (see
// MaxBatchOptions::cpu_memory_limit), the previous one put back after. Throws std::invalid_argument for a
// CPU memory limit on CUDA: there the GPU's own memory is the limit. A model that does not fit on its own
// gives a result with no tries, no max_batch and its error. The experiment's batch sizes are ignored.
MaxBatchResult run_max_batch(const ExperimentConfig& experiment, const torch::Device& device,
                             const MaxBatchOptions& options, const TryObserver& on_try,
                             const SearchSession& session = {});

}  // namespace batchscope
