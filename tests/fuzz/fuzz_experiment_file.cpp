// The YAML experiment file, as `batchscope sweep FILE` reads it: any text is either a set of checked
// experiments or one UserError. A file that is accepted must also survive what the sweep does next
// before timing anything: the run record (to_json and back) and the plan of FLOPs per step.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "lib/config/config.h"
#include "lib/common/errors.h"
#include "lib/sweep/sweep_plan.h"

using namespace batchscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  SweepConfig config;
  try {
    config = parse_sweep_config(text, "fuzz.yaml");
  } catch (const UserError&) {
    return 0;  // refused with a located sentence
  }
  for (const ExperimentConfig& e : config.experiments) {
    const nlohmann::json record = to_json(e);
    if (to_json(experiment_from_json(record)) != record) std::abort();  // the run record reads back
  }
  try {
    (void)sweep_plan(config);
  } catch (const UserError&) {
    // a model that does not accept its input: refused with a sentence
  }
  return 0;
}
