// The batch-size specification ("70", "1:64:8", "1:60000:x2", "1,8,32", "1:max:x2"): any text either
// parses into sizes that keep their promises or is refused with std::invalid_argument.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "lib/config/batch_spec.h"
#include "lib/common/limits.h"

using namespace batchscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    if (const auto to_max = parse_batch_to_max(text)) {
      // The largest size is found at run time; any size up to the limit must expand.
      for (int64_t max : {int64_t{1}, int64_t{1000}, limits::kMaxBatchSize}) {
        if (max < to_max->from) continue;
        const auto sizes = expand_to_max(*to_max, max);
        if (sizes.empty() || sizes.back() != max) std::abort();
      }
      return 0;
    }
    const auto sizes = parse_batch_spec(text);
    if (sizes.empty()) std::abort();
    for (int64_t b : sizes) {
      if (b < 1 || b > limits::kMaxBatchSize) std::abort();
    }
  } catch (const std::invalid_argument&) {
    // refused with a sentence: what the parser promises
  }
  return 0;
}
