#pragma once

#include <cstdint>

// The largest values a configuration or the command line may give. Beyond them a size is a typo rather
// than an experiment, and products of them (a batch of samples, a sample of dimensions) could overflow
// 64-bit arithmetic before LibTorch allocates anything.
namespace batchscope::limits {

constexpr int64_t kMaxBatchSize = int64_t{1} << 24;       // 16,777,216 samples in one batch
constexpr int64_t kMaxDimension = int64_t{1} << 20;       // one input dimension: pixels, tokens, frames
constexpr int64_t kMaxSampleElements = int64_t{1} << 31;  // the elements of one sample
constexpr int64_t kMaxBatchElements = int64_t{1} << 40;   // the elements of the largest batch
constexpr int64_t kMaxClasses = int64_t{1} << 24;         // classes, or a vocabulary
constexpr int64_t kMaxSteps = 1000000;                    // warm-up or timed steps per batch size
constexpr int64_t kMaxProfileSteps = 100;                  // profiled steps per batch size (each keeps its events)
constexpr int64_t kMaxRepeats = 100;                       // passes of the ladder (repeats: R)
constexpr int64_t kMaxNameLength = 200;                    // an experiment's name, which names its files
constexpr int64_t kMaxThreads = 4096;  // LibTorch CPU threads (--threads, OMP_NUM_THREADS)
constexpr int64_t kMaxShards = 9999;                       // shards of one sweep (their directories count to 4 digits)

// The fewest timed steps a batch size needs for analyze to use it (its median, jumps, best size), unless
// analyze --min-samples says otherwise; a sweep with fewer warns before it starts.
constexpr int kMinAnalyzedSteps = 5;
// steps: auto: the first block of timed steps, so that the median has a 95% confidence interval (6
// steps at least) that means something; and the longest a batch size may be timed.
constexpr int kAutoFirstSteps = 10;
constexpr double kMaxAutoTimeS = 86400;

}  // namespace batchscope::limits
