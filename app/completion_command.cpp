#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/command_line.h"
#include "app/commands.h"
#include "lib/config/config.h"
#include "lib/timing/peak_rate.h"
#include "lib/training/batch_study.h"
#include "models/registry.h"

// batchscope completion bash: a bash completion script made from the commands' own option definitions,
// read from each command's --help, so that it lists exactly the options the commands take.

namespace batchscope::app {
namespace {

// What a command writes to standard output for these arguments (its --help).
std::string output_of(CommandRunner run, const std::vector<std::string>& args) {
  std::ostringstream captured;
  std::streambuf* saved = std::cout.rdbuf(captured.rdbuf());
  try {
    run(args);
  } catch (...) {
    std::cout.rdbuf(saved);
    throw;
  }
  std::cout.rdbuf(saved);
  return captured.str();
}

// The long options of a help text: those that begin an option line ("  -m, --model arg   ...").
std::set<std::string> options_in_help(const std::string& help) {
  static const std::regex option_line(R"(^\s+(?:-\w,\s+)?(--[a-z0-9][a-z0-9-]*))");
  std::set<std::string> out;
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, option_line)) out.insert(m[1]);
  }
  return out;
}

std::string joined(const std::set<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string bash_script() {
  // peak measures TF32 too, a precision sweeps do not take.
  std::string peak_precisions;
  for (const std::string& p : kPeakPrecisions) peak_precisions += (peak_precisions.empty() ? "" : " ") + p;
  std::string peak_operations;
  for (const std::string& o : kPeakOperations) peak_operations += (peak_operations.empty() ? "" : " ") + o;
  std::set<std::string> names;
  std::ostringstream cases;
  for (const auto& [name, run] : commands()) {
    names.insert(name);
    std::set<std::string> options;
    std::string first_words;
    if (name == "submit") {
      for (const char* engine : {"slurm", "k8s"}) {
        const auto more = options_in_help(output_of(run, {engine, "--help"}));
        options.insert(more.begin(), more.end());
      }
      first_words = "slurm k8s";
    } else if (name == "completion") {
      first_words = "bash";
      options = {"--help"};
    } else {
      options = options_in_help(output_of(run, {"--help"}));
    }
    cases << "    " << name << ") options=\"" << joined(options) << "\"; first=\"" << first_words
          << "\" ;;\n";
  }
  std::set<std::string> models;
  for (const auto& m : models::all_models()) models.insert(m.name);

  std::ostringstream s;
  s << "# bash completion for batchscope, made by `batchscope completion bash` from the commands' own\n"
       "# options. Source it, or put it where bash-completion looks (scripts/setup.sh does).\n"
       "_batchscope() {\n"
       "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
       "  local commands=\""
    << joined(names)
    << "\"\n"
       "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
       "    COMPREPLY=($(compgen -W \"$commands help --help --version\" -- \"$cur\"))\n"
       "    return\n"
       "  fi\n"
       "  local options=\"\" first=\"\"\n"
       "  case \"${COMP_WORDS[1]}\" in\n"
    << cases.str()
    << "    help) [ \"$COMP_CWORD\" -eq 2 ] && COMPREPLY=($(compgen -W \"$commands\" -- \"$cur\")); return "
       ";;\n"
       "    *) return ;;\n"
       "  esac\n"
       "  if [ \"$COMP_CWORD\" -eq 2 ] && [ -n \"$first\" ]; then\n"
       "    COMPREPLY=($(compgen -W \"$first\" -- \"$cur\"))\n"
       "    return\n"
       "  fi\n"
       "  case \"$prev\" in\n"
       "    -m|--model) COMPREPLY=($(compgen -W \""
    << joined(models)
    << "\" -- \"$cur\") $(compgen -f -- \"$cur\")); return ;;  # or a TorchScript file\n"
       "    --phase) COMPREPLY=($(compgen -W \""
    << to_string(Phase::Train) << " " << to_string(Phase::Infer)
    << "\" -- \"$cur\")); return ;;\n"
       "    --precision)\n"
       "      if [ \"${COMP_WORDS[1]}\" = peak ]; then COMPREPLY=($(compgen -W \""
    << peak_precisions
    << "\" -- \"$cur\")); return; fi\n"
       "      COMPREPLY=($(compgen -W \""
    << to_string(Precision::FP32) << " " << to_string(Precision::FP16) << " " << to_string(Precision::BF16)
    << "\" -- \"$cur\")); return ;;\n"
       "    --optimizer) COMPREPLY=($(compgen -W \""
    << to_string(OptimizerKind::SGD) << " " << to_string(OptimizerKind::Momentum) << " "
    << to_string(OptimizerKind::Adam) << " " << to_string(OptimizerKind::AdamW)
    << "\" -- \"$cur\")); return ;;\n"
       "    --order) COMPREPLY=($(compgen -W \""
    << to_string(BatchOrder::Ascending) << " " << to_string(BatchOrder::Shuffled)
    << "\" -- \"$cur\")); return ;;\n"
       "    --input-kind) COMPREPLY=($(compgen -W \""
    << models::to_string(models::FileInput::Float) << " " << models::to_string(models::FileInput::Tokens)
    << "\" -- \"$cur\")); return ;;\n"
       "    --transfer) COMPREPLY=($(compgen -W \""
    << to_string(Transfer::Excluded) << " " << to_string(Transfer::Included)
    << "\" -- \"$cur\")); return ;;\n"
       "    --tf32) COMPREPLY=($(compgen -W \""
    << to_string(Tf32::Default) << " " << to_string(Tf32::On) << " " << to_string(Tf32::Off)
    << "\" -- \"$cur\")); return ;;\n"
       "    --operation) COMPREPLY=($(compgen -W \""
    << peak_operations
    << "\" -- \"$cur\")); return ;;\n"
       "    --foreach) COMPREPLY=($(compgen -W \"auto on off\" -- \"$cur\")); return ;;\n"
       "    --augment) COMPREPLY=($(compgen -W \"auto none flip crop crop+flip\" -- \"$cur\")); return ;;\n"
       "    --lr-decay) COMPREPLY=($(compgen -W \"none cosine step:\" -- \"$cur\")); return ;;\n"
       "    --lr-scaling) COMPREPLY=($(compgen -W \""
    << to_string(LrScaling::None) << " " << to_string(LrScaling::Linear) << " " << to_string(LrScaling::Sqrt)
    << "\" -- \"$cur\")); return ;;\n"
       "    --loss-scale) COMPREPLY=($(compgen -W \"auto "
    << to_string(LossScale::Dynamic) << " " << to_string(LossScale::Off)
    << "\" -- \"$cur\")); return ;;\n"
       "    -d|--device) COMPREPLY=($(compgen -W \"auto cpu cuda cuda:0 cuda:1\" -- \"$cur\")); return ;;\n"
       "  esac\n"
       "  if [[ \"$cur\" == -* ]]; then\n"
       "    COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))\n"
       "    return\n"
       "  fi\n"
       "  COMPREPLY=($(compgen -f -- \"$cur\"))\n"
       "}\n"
       "complete -o filenames -F _batchscope batchscope\n";
  return s.str();
}

}  // namespace

int run_completion_command(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
    std::cout
        << "usage: batchscope completion bash\n"
           "Prints a bash completion script made from every command's options. scripts/setup.sh installs "
           "it; by hand:\n  source <(batchscope completion bash)\n";
    return 0;
  }
  if (args.size() != 1 || args[0] != "bash")
    refuse("completion takes one shell, bash", "run batchscope completion bash");
  std::cout << bash_script();
  return 0;
}

}  // namespace batchscope::app
