// The IDX reader (MNIST's format, plain or gzip): any bytes are either an array whose data is exactly
// as long as its dimensions say, or one UserError naming the file.

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "data/idx.h"
#include "lib/common/errors.h"
#include "tests/fuzz/fuzz_support.h"

using namespace batchscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_input("input.idx", data, size);
  try {
    const data::IdxArray array = data::read_idx(path);
    int64_t elements = 1;
    for (int64_t d : array.dims) {
      if (d < 0) std::abort();
      elements *= d;
    }
    if (static_cast<size_t>(elements) != array.bytes.size()) std::abort();
  } catch (const UserError&) {
    // refused with a sentence naming the file
  }
  return 0;
}
