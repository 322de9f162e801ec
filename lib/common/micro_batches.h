#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchscope {

// The micro-batches (in inference, slices) a batch runs in at most `chunk` samples at a time: as few as
// hold it, ceil(batch / chunk), and as even as they can be, so that no pass is a sliver of the batch
// (250 at most 8 at a time runs as 26 of 8 and 6 of 7, not 31 of 8 and one of 2). From a chunk of 64 on
// that is a multiple of 8 they are counted in eights (a GPU's tensor cores take their rows in eights),
// the batch's rest beyond its eights in the last: 4096 at most 1368 at a time runs as 1368, 1368 and
// 1360. The batch whole where `chunk` is 0 or holds it. The largest is at most `chunk`, and the sizes
// are in descending order.
std::vector<int64_t> micro_batch_sizes(int64_t batch, int64_t chunk);

// The smallest chunk whose micro_batch_sizes for `batch` are none below `least_part` samples (a batch of 5
// at most 2 at a time runs 2, 2 and 1; at most 3, 3 and 2): the parts only grow with the chunk, so every
// chunk from it on holds too.
int64_t smallest_chunk_for(int64_t batch, int64_t least_part);

// "3×1368" or "2×1368 + 1360", "26×8 + 6×7": the sizes of micro_batch_sizes, counted.
std::string micro_batch_text(const std::vector<int64_t>& sizes);

}  // namespace batchscope
