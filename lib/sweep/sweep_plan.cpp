#include "lib/sweep/sweep_plan.h"

#include <stdexcept>

#include "lib/common/errors.h"
#include "lib/timing/step_runner.h"
#include "models/registry.h"

namespace batchscope {

nlohmann::json sweep_plan(const SweepConfig& config) {
  nlohmann::json experiments = nlohmann::json::array();
  for (const ExperimentConfig& e : config.experiments) {
    const models::ModelSpec* spec = experiment_model(e);
    if (spec == nullptr)
      throw UserError(
          located_value(e, "model", e.model + " is not a known model", models::unknown_model_fix(e.model)));
    double forward = 0;
    try {
      forward = spec->forward_flops(e.input_shape, e.classes);
    } catch (const std::invalid_argument& error) {
      throw UserError(located_value(e, "input", error.what(), ""));
    }
    nlohmann::json flops = nlohmann::json::array();
    for (const int64_t b : e.batch_sizes) flops.push_back(step_flops(e.phase, forward, b));
    nlohmann::json entry = to_json(e);
    entry["forward_flops_per_sample"] = forward;
    entry["flops_per_step"] = flops;
    experiments.push_back(entry);
  }
  return {{"source", config.source}, {"experiments", experiments}};
}

}  // namespace batchscope
