#pragma once

// Internal to lib/: one experiment's keys, gathered from a file's defaults, the experiment itself and the
// command line, checked and turned into an ExperimentConfig.
#include <string>
#include <vector>

#include "lib/config/config.h"
#include "lib/config/yaml_fields.h"

namespace batchscope {

// The source of values given as command-line flags.
inline const char* const kCommandLine = "command line";

// The keys an experiment accepts, in the order messages list them.
// clang-format off
inline const std::vector<std::string> kExperimentKeys = {
    "name",     "model",     "input",         "seq_len",       "classes",         "batch",
    "phase",    "optimizer", "precision",     "channels_last", "cudnn_benchmark", "warmup",
    "steps",    "order",     "data",          "transfer",      "chunk",           "seed",
    "device",   "profile",   "profile_steps", "repeats",       "ci_width",        "min_time",
    "max_time", "tf32",      "loss_scale",    "input_kind",    "vocab"};
// clang-format on

// Puts every command-line value in `o` into `into`, replacing the key's value from the file.
void apply_overrides(const SweepOverrides& o, yaml_fields::Entries& into);

// Turns one experiment's merged entries into a checked ExperimentConfig; `at` is the experiment.
ExperimentConfig read_experiment(const yaml_fields::Entries& entries, const yaml_fields::Where& at,
                                 const SweepOverrides& overrides);

}  // namespace batchscope
