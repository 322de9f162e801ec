#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lib/config/config.h"

namespace batchscope::app {

// Each command takes the arguments after its name and returns the process exit code.
// A user's mistake throws UserError (exit code 2, by main).
int run_sweep_command(const std::vector<std::string>& args);
int run_analyze_command(const std::vector<std::string>& args);
int run_maxbatch_command(const std::vector<std::string>& args);
int run_train_command(const std::vector<std::string>& args);
int run_eval_command(const std::vector<std::string>& args);
int run_microbatch_command(const std::vector<std::string>& args);
int run_models_command(const std::vector<std::string>& args);
int run_env_command(const std::vector<std::string>& args);
int run_peak_command(const std::vector<std::string>& args);

int run_status_command(const std::vector<std::string>& args);
int run_submit_command(const std::vector<std::string>& args);

// The experiments of CONFIG as `batchscope sweep CONFIG SWEEP_ARGS` reads them, before any device is
// resolved: what batchscope submit plans. Options that belong to submit are refused.
SweepConfig submitted_sweep_config(const std::string& config_path, const std::vector<std::string>& sweep_args);

int run_compare_command(const std::vector<std::string>& args);
int run_completion_command(const std::vector<std::string>& args);

// Every command by its name, in the order usage() lists them: what main runs and completion completes.
using CommandRunner = int (*)(const std::vector<std::string>& args);
const std::vector<std::pair<std::string, CommandRunner>>& commands();

std::string usage();

// The command line's first word, which is no command, refused with what it was meant for: the nearest
// command or another tool's name for one ("swep" and "benchmark" are sweep, "merge" analyze), or, for an
// option or a file given first, the whole line with the command it needs ("batchscope sweep --model
// vgg16", "batchscope analyze runs/x/steps.jsonl").
[[noreturn]] void refuse_unknown_command(const std::vector<std::string>& line);

}  // namespace batchscope::app
