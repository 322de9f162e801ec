#include "app/commands.h"

#include <filesystem>
#include <map>

#include "app/command_line.h"
#include "lib/common/errors.h"
#include "lib/common/words.h"
#include "lib/config/yaml_fields.h"

namespace batchscope::app {
namespace {

// Commands as other tools, or other words, name them: too far from ours for the edit distance to catch.
const std::map<std::string, std::string> kCommandAliases = {{"bench", "sweep"},
                                                            {"benchmark", "sweep"},
                                                            {"run", "sweep"},
                                                            {"profile", "sweep"},
                                                            {"measure", "sweep"},
                                                            {"time", "sweep"},
                                                            {"report", "analyze"},
                                                            {"plot", "analyze"},
                                                            {"plots", "analyze"},
                                                            {"merge", "analyze"},
                                                            {"summarize", "analyze"},
                                                            {"summary", "analyze"},
                                                            {"diff", "compare"},
                                                            {"progress", "status"},
                                                            {"shards", "status"},
                                                            {"slurm", "submit"},
                                                            {"sbatch", "submit"},
                                                            {"k8s", "submit"},
                                                            {"kubernetes", "submit"},
                                                            {"max-batch", "maxbatch"},
                                                            {"max_batch", "maxbatch"},
                                                            {"oom", "maxbatch"},
                                                            {"fit", "train"},
                                                            {"training", "train"},
                                                            {"evaluate", "eval"},
                                                            {"test", "eval"},
                                                            {"accuracy", "eval"},
                                                            {"micro-batch", "microbatch"},
                                                            {"micro_batch", "microbatch"},
                                                            {"ucudnn", "microbatch"},
                                                            {"list", "models"},
                                                            {"zoo", "models"},
                                                            {"info", "env"},
                                                            {"environment", "env"},
                                                            {"system", "env"},
                                                            {"roofline", "peak"},
                                                            {"flops", "peak"},
                                                            {"tflops", "peak"},
                                                            {"completions", "completion"}};

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

const std::vector<std::pair<std::string, CommandRunner>>& commands() {
  static const std::vector<std::pair<std::string, CommandRunner>> all = {
      {"sweep", run_sweep_command},       {"analyze", run_analyze_command}, {"compare", run_compare_command},
      {"status", run_status_command},
      {"submit", run_submit_command},     {"maxbatch", run_maxbatch_command}, {"train", run_train_command},
      {"eval", run_eval_command},         {"microbatch", run_microbatch_command}, {"models", run_models_command},
      {"env", run_env_command},           {"peak", run_peak_command},
      {"completion", run_completion_command}};
  return all;
}

std::string usage() {
  return "batchscope " BATCHSCOPE_VERSION
         " - what a batch size really costs: per-step timed training and inference sweeps\n\n"
         "usage: batchscope COMMAND [options]\n\n"
         "commands:\n"
         "  sweep [CONFIG.yaml] [options]  time training (or inference) steps over batch sizes, with their "
         "energy\n"
         "  analyze LOG... [options]       find the trend, jumps and periods in sweep logs; report and "
         "plots\n"
         "  compare BASELINE CONTENDER     per batch size, slower or faster beyond the noise and a "
         "threshold; "
         "exit 1 if slower\n"
         "  status OUT [--json]            which shards of a sharded sweep are complete, running, stopped or "
         "missing\n"
         "  submit slurm|k8s CONFIG.yaml   share a sweep out over a Slurm job array or a Kubernetes Indexed "
         "Job\n"
         "  maxbatch --model M [options]   the largest batch size that runs a full step on a device\n"
         "  train [options]                train a model on MNIST, Fashion-MNIST or CIFAR to an accuracy, "
         "with checkpoints\n"
         "  eval --checkpoint DIR          evaluate a checkpoint on the test split\n"
         "  microbatch --model M --batch B plan micro-batch splits of each convolution (µ-cuDNN) and measure "
         "them\n"
         "  models [--json]                list the model zoo: parameters (against the references), default "
         "input, GFLOPs per sample\n"
         "  env [--json]                   print the environment a run record holds, and how energy is "
         "measured\n"
         "  peak [--device D] [--json]     the device's dense rates, matrix product and convolution (fp32, "
         "TF32,\n"
         "                                 bf16, fp16): the peaks a sweep's TFLOP/s is read against\n\n"
         "  completion bash                print a bash completion script (scripts/setup.sh installs it)\n\n"
         "batchscope COMMAND --help (or batchscope help COMMAND) describes a command's options, with their\n"
         "defaults; batchscope --version prints the version.\n\n"
         "Every command fixes glibc's malloc thresholds (mmap 32 MiB, trim 2 GiB) so that CPU steps repeat,\n"
         "unless MALLOC_* variables or an LD_PRELOAD allocator decide; BATCHSCOPE_MALLOC=dynamic keeps "
         "glibc's\n"
         "own. The run record's cpu.malloc says which.\n";
}

void refuse_unknown_command(const std::vector<std::string>& line) {
  const std::string& word = line.front();
  const std::vector<std::string> rest(line.begin() + 1, line.end());
  std::vector<std::string> names;
  for (const auto& [name, run] : commands()) names.push_back(name);
  std::string problem = "unknown command '" + word + "'", meant = meant_word(word, names, kCommandAliases);
  std::error_code error;
  if (!meant.empty()) {
    meant = "did you mean " + command_text(meant, rest) + "? ";
  } else if (word.size() > 1 && word[0] == '-') {
    problem = "the option " + word + " comes before any command";
    meant = "did you mean " + command_text(word == "--checkpoint" ? "eval" : "sweep", line) + "? ";
  } else if (ends_with(word, ".yaml") || ends_with(word, ".yml")) {
    meant = "did you mean " + command_text("sweep", line) + "? ";
  } else if (ends_with(word, ".jsonl") || ends_with(word, ".jsonl.gz") ||
             std::filesystem::exists(std::filesystem::path(word) / "steps.jsonl", error)) {
    meant = "did you mean " + command_text("analyze", line) + "? ";
  }
  throw UserError(
      located("command line", 0, problem,
              meant + "use one of " + yaml_fields::join(names) + " (batchscope --help lists them)"));
}

}  // namespace batchscope::app
