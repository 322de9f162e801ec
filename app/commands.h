#pragma once

#include <string>
#include <vector>

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

std::string usage();

}  // namespace batchscope::app
