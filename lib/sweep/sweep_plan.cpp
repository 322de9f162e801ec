#include "lib/sweep/sweep_plan.h"

#include "lib/common/errors.h"
#include "lib/timing/step_runner.h"
#include "models/registry.h"

namespace batchscope {

nlohmann::json sweep_plan(const SweepConfig& config) {
  nlohmann::json experiments = nlohmann::json::array();
  for (const ExperimentConfig& e : config.experiments) {
    const double forward = experiment_forward_flops(e);
    const double data_gradient =
        models::data_gradient_flops(known_experiment_model(e), e.input_shape, e.classes);
    nlohmann::json flops = nlohmann::json::array();
    for (const int64_t b : e.batch_sizes) flops.push_back(step_flops(e.phase, forward, data_gradient, b));
    nlohmann::json entry = to_json(e);
    entry["forward_flops_per_sample"] = forward;
    if (e.phase == Phase::Train) entry["data_gradient_flops_per_sample"] = data_gradient;
    entry["flops_per_step"] = flops;
    experiments.push_back(entry);
  }
  return {{"source", config.source}, {"experiments", experiments}};
}

}  // namespace batchscope
