#include "lib/common/micro_batches.h"

#include <algorithm>

namespace batchscope {

std::vector<int64_t> micro_batch_sizes(int64_t batch, int64_t chunk) {
  if (chunk <= 0 || chunk >= batch) return {batch};
  const int64_t parts = (batch + chunk - 1) / chunk;
  const int64_t unit = chunk >= 64 && chunk % 8 == 0 && batch / 8 >= parts ? 8 : 1;
  const int64_t units = batch / unit;
  const int64_t base = units / parts;
  const int64_t larger = units % parts;  // parts that take one unit more
  std::vector<int64_t> sizes(static_cast<std::size_t>(parts), base * unit);
  for (int64_t i = 0; i < larger; ++i) sizes[static_cast<std::size_t>(i)] += unit;
  sizes.back() += batch % unit;
  std::sort(sizes.rbegin(), sizes.rend());
  return sizes;
}

int64_t smallest_chunk_for(int64_t batch, int64_t least_part) {
  int64_t chunk = least_part;
  while (chunk < batch && micro_batch_sizes(batch, chunk).back() < least_part) ++chunk;
  return chunk;
}

std::string micro_batch_text(const std::vector<int64_t>& sizes) {
  std::string text;
  for (std::size_t i = 0; i < sizes.size();) {
    std::size_t same = i;
    while (same < sizes.size() && sizes[same] == sizes[i]) ++same;
    if (!text.empty()) text += " + ";
    text += (same - i > 1 ? std::to_string(same - i) + "×" : "") + std::to_string(sizes[i]);
    i = same;
  }
  return text;
}

}  // namespace batchscope
