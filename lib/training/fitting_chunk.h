#pragma once

#include <cstdint>
#include <string>

#include "data/datasets.h"
#include "lib/sweep/max_batch.h"  // even_chunk
#include "lib/training/training.h"

namespace batchscope {

// The share of the device's memory that --chunk auto's search leaves free: what training holds beyond the
// searched step (the evaluations' activations between steps, the caching allocator's other blocks).
constexpr double kChunkSearchMargin = 0.05;

// Searches for the largest micro-batch, up to o.batch_size, whose training step fits on the device beside
// the batch itself, held there as training holds it: maxbatch's search (lib/sweep/max_batch.h) of the
// run's model, optimizer, precision and layout on synthetic samples of the data's shape, starting at the
// batch (a batch that fits takes one try and the confirmation), or at o.chunk_fits where that is below
// it, to within 8 samples from a batch of 64 on, with kChunkSearchMargin of the memory
// left free. On the CPU it runs under the limit in place, else under what LibTorch holds now and 90% of
// the memory the system has available. Each try is a log line. Where not one sample fits, a UserError
// says so. The model built for the search is gone when it returns.
ChunkSearch search_fitting_chunk(const TrainingOptions& o, const std::string& device_name,
                                 const data::DatasetKind& kind);

// "the largest micro-batch that fits is 1537 (11 tries, 3.2 s, 5% of the memory left free); each batch
// of 4096 as 3 micro-batches of at most 1368", or "the batch of 512 fits whole (...)".
std::string describe(const ChunkSearch& s);

}  // namespace batchscope
