#pragma once

#include <nlohmann/json.hpp>

#include "lib/config/config.h"

namespace batchscope {

// What a sweep of `config` would run, without running or writing anything: every experiment as its
// run record holds it, with its forward FLOPs per sample and the FLOPs of one step at each batch size
// (a training step counts 3x the forward pass, less the data gradient of the first layer). Sizes that end at
// `max` are listed once the sweep has searched for them; until then `batch_to_max` says where they start.
// Throws UserError for a model that does not accept its input.
nlohmann::json sweep_plan(const SweepConfig& config);

}  // namespace batchscope
