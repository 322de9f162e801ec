// checkpoint.json, as `batchscope eval` reads it before rebuilding a model: any bytes are either a
// description of a known model with weights inside its directory, or one UserError naming the file.

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "lib/common/errors.h"
#include "lib/training/training.h"
#include "models/registry.h"
#include "tests/fuzz/fuzz_support.h"

using namespace batchscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_input("checkpoint.json", data, size);
  try {
    const CheckpointInfo info = read_checkpoint_info(path);
    if (models::find_model(info.model) == nullptr) std::abort();
    if (info.weights.empty() || info.weights.find('/') != std::string::npos) std::abort();
    if (info.limit_test < 0) std::abort();
  } catch (const UserError&) {
    // refused with a sentence naming the file
  }
  return 0;
}
