#include "app/command_line.h"

#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

#include "lib/common/errors.h"
#include "lib/common/words.h"
#include "lib/config/batch_spec.h"
#include "lib/config/yaml_fields.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/cpu_threads.h"
#include "lib/device/gpu.h"
#include "lib/device/gpu_memory_cap.h"
#include "models/registry.h"
#include "models/torchscript.h"

namespace batchscope::app {

namespace {

cxxopts::ParseResult parse_with_cxxopts(cxxopts::Options& options, const std::vector<std::string>& args) {
  std::vector<const char*> argv{options.program().c_str()};
  for (const std::string& a : args) argv.push_back(a.c_str());
#if CXXOPTS__VERSION_MAJOR >= 3
  return options.parse(static_cast<int>(argv.size()), argv.data());
#else
  // cxxopts 2 (Ubuntu 22.04 images) takes argc and argv by non-const reference.
  int argc = static_cast<int>(argv.size());
  char** mutable_argv = const_cast<char**>(argv.data());
  cxxopts::ParseResult result = options.parse(argc, mutable_argv);
  // What no option took is left in argv.
  if (argc > 1) {
    refuse("'" + printable(mutable_argv[1]) + "' is an argument " + options.program() + " does not take",
           "leave it out; " + options.program() + " --help lists what it takes");
  }
  return result;
#endif
}

// The option that was given `value`, as "--name", from the arguments ("--name value", "--name=value",
// "-n value"); empty when none was.
std::string option_given(const std::vector<std::string>& args, const std::string& value) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') continue;
    const size_t equals = a.find('=');
    if (equals != std::string::npos && a.substr(equals + 1) == value) return a.substr(0, equals);
    if (equals == std::string::npos && i + 1 < args.size() && args[i + 1] == value) return a;
  }
  return "";
}

// The text quoted between `head` and `tail` in a cxxopts message ("Option 'epoch' does not exist"), its
// quotes removed (typographic in cxxopts 3.1, plain from 3.2); nullopt where the message is another.
std::optional<std::string> quoted_between(const std::string& what, const std::string& head,
                                          const std::string& tail) {
  const size_t start = what.find(head), end = what.rfind(tail);
  if (start == std::string::npos || end == std::string::npos || end < start + head.size())
    return std::nullopt;
  std::string text = what.substr(start + head.size(), end - start - head.size());
  for (const std::string& quote : std::vector<std::string>{"\u2018", "'"}) {
    if (text.rfind(quote, 0) == 0) {
      text.erase(0, quote.size());
      break;
    }
  }
  for (const std::string& quote : std::vector<std::string>{"\u2019", "'"}) {
    if (text.size() >= quote.size() && text.compare(text.size() - quote.size(), quote.size(), quote) == 0) {
      text.erase(text.size() - quote.size());
      break;
    }
  }
  return text;
}

// An option's name as the arguments gave it: "--epoch" where one of them is --epoch or --epoch=..., else
// "-e" (a short option, alone or among others as in -qe).
std::string as_given(const std::vector<std::string>& args, const std::string& name) {
  for (const std::string& a : args) {
    if (a == "--" + name || a.rfind("--" + name + "=", 0) == 0) return "--" + printable(name);
  }
  return (name.size() == 1 ? "-" : "--") + printable(name);
}

// Every long name of the options (cxxopts 3.1 and later list several per option, earlier ones one).
[[maybe_unused]] void add_long_names(const std::vector<std::string>& names, std::vector<std::string>& into) {
  into.insert(into.end(), names.begin(), names.end());
}
[[maybe_unused]] void add_long_names(const std::string& name, std::vector<std::string>& into) {
  if (!name.empty()) into.push_back(name);
}

// The option a mistyped one most likely meant: a name from other tools (--batch-size is --batch), or
// the nearest long name, at most two letters off (one, for names of three letters or fewer). Empty
// where none is near.
std::string meant_option(const cxxopts::Options& options, const std::string& unknown) {
  std::vector<std::string> names;
  for (const std::string& group : options.groups()) {
    for (const auto& option : options.group_help(group).options) add_long_names(option.l, names);
  }
  std::string snake = unknown, alias;
  std::replace(snake.begin(), snake.end(), '-', '_');
  alias = yaml_fields::alias_of(snake);
  std::replace(alias.begin(), alias.end(), '_', '-');
  if (!alias.empty() && std::count(names.begin(), names.end(), alias)) return alias;
  if (unknown.size() < 3) return "";
  return nearest_word(unknown, names, unknown.size() <= 3 ? 2 : 3);
}

// An option that takes one value given twice ("--model a --model b", CONFIG and --config), or an
// argument no option takes (a second CONFIG): cxxopts keeps the last value and drops the extra argument,
// which would run something the user did not read on the command line. Lists (--experiment, analyze's
// LOGs) and flags may repeat.
void refuse_ignored_values(const cxxopts::ParseResult& result, const std::string& program) {
#if CXXOPTS__VERSION_MAJOR >= 3
  if (!result.unmatched().empty()) {
    const std::string extra = printable(result.unmatched().front());
    if (result.count("config")) {
      refuse("two experiment files are given (" + printable(result["config"].as<std::string>()) + ", " +
                 extra + ")",
             "give one; a sweep runs one file's experiments");
    }
    refuse("'" + extra + "' is an argument " + program + " does not take",
           "leave it out; " + program + " --help lists what it takes");
  }
#endif
  std::map<std::string, std::vector<std::string>> given;
  for (const auto& kv : result.arguments()) {
    // An empty value (--out "", a variable that was not set) names nothing.
    if (kv.value().empty())
      refuse("--" + kv.key() + " is given an empty value", "give it a value, or leave it out");
    given[kv.key()].push_back(kv.value());
  }
  for (const auto& [name, values] : given) {
    if (values.size() < 2) continue;
    try {
      result[name].as<std::vector<std::string>>();
      continue;  // a list
    } catch (const std::exception&) {
    }
    try {
      result[name].as<bool>();
      continue;  // a flag
    } catch (const std::exception&) {
    }
    std::string shown;
    for (const std::string& v : values) shown += (shown.empty() ? "" : ", ") + printable(v);
    if (name == "config") {
      refuse("two experiment files are given (" + shown + ")",
             "give one; a sweep runs one file's experiments");
    }
    refuse("--" + name + " is given " + std::to_string(values.size()) + " times (" + shown + ")",
           "give it once");
  }
}

}  // namespace

cxxopts::ParseResult parse_command_line(cxxopts::Options& options, const std::vector<std::string>& args) {
  // The positional arguments (a sweep's CONFIG, eval's CHECKPOINT, analyze's LOGs) are options too, and
  // --help lists them with the rest.
  options.show_positional_help();
  try {
    cxxopts::ParseResult result = parse_with_cxxopts(options, args);
    refuse_ignored_values(result, options.program());
    return result;
  } catch (const CommandLineError& error) {
    // cxxopts's own sentences ("Option 'epoch' does not exist") become ours, naming the option as it was
    // given and the fix.
    const std::string what = error.what(), help = options.program() + " --help";
    if (const auto unknown = quoted_between(what, "Option ", " does not exist")) {
      const std::string given = as_given(args, *unknown);
      const std::string meant = meant_option(options, *unknown);
      refuse(given + " is not an option of " + options.program(),
             (meant.empty() ? "" : "did you mean --" + meant + "? ") + help + " lists its options");
    }
    if (const auto bare = quoted_between(what, "Option ", " is missing an argument")) {
      refuse(as_given(args, *bare) + " needs a value after it", help + " says what it takes");
    }
    // "Argument 'VALUE' failed to parse", without the option: find it.
    const auto value = quoted_between(what, "Argument ", " failed to parse");
    if (!value) throw;
    const std::string option = option_given(args, *value);
    if (option.empty()) throw;
    throw UserError(located("command line", 0,
                            option + ": '" + printable(*value) + "' is not a value that option takes",
                            "see " + help));
  }
}

namespace {

[[noreturn]] void refuse_value(const std::string& name, const std::string& text, const std::string& should_be,
                               const std::string& example) {
  throw UserError(located("command line", 0, "--" + name + ": '" + printable(text) + "' is not " + should_be,
                          "give one, e.g. --" + name + " " + example));
}

std::string number_text(double v) {
  std::ostringstream out;
  out.precision(12);
  out << v;
  return out.str();
}

}  // namespace

std::optional<int64_t> whole_number(const std::string& text) {
  const char* begin = text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

int64_t whole_option(const cxxopts::ParseResult& result, const std::string& name, int64_t least, int64_t most) {
  const std::string text = result[name].as<std::string>();
  const std::optional<int64_t> value = whole_number(text);
  if (!value || *value < least || *value > most) {
    refuse_value(name, text,
                 most == INT64_MAX
                     ? "a whole number of " + std::to_string(least) + " or more"
                     : "a whole number from " + std::to_string(least) + " to " + std::to_string(most),
                 std::to_string(least));
  }
  return *value;
}

uint64_t seed_option(const cxxopts::ParseResult& result, const std::string& name) {
  const std::string text = result[name].as<std::string>();
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty())
    refuse_value(name, text, "a whole number from 0 to " + std::to_string(UINT64_MAX), "0");
  return value;
}

double real_option(const cxxopts::ParseResult& result, const std::string& name, double least, double most,
                   bool least_excluded) {
  const std::string text = result[name].as<std::string>();
  char* end = nullptr;
  const double value = text.empty() || std::isspace(static_cast<unsigned char>(text[0]))
                           ? std::nan("")
                           : std::strtod(text.c_str(), &end);
  const bool in_range = std::isfinite(value) && (least_excluded ? value > least : value >= least) && value <= most;
  if (end != text.c_str() + text.size() || !in_range) {
    refuse_value(name, text,
                 std::string("a number ") + (least_excluded ? "above " : "from ") + number_text(least) +
                     (least_excluded ? " up to " : " to ") + number_text(most),
                 least_excluded ? number_text(least + 1) : number_text(least));
  }
  return value;
}

double percent_option(const cxxopts::ParseResult& result, const std::string& name, double most_percent) {
  std::string text = result[name].as<std::string>();
  const std::string given = text;
  if (!text.empty() && text.back() == '%') text.pop_back();
  char* end = nullptr;
  const double value = text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ? std::nan("")
                                                                                          : std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value) || value < 0 || value > most_percent) {
    refuse_value(name, given, "a percentage from 0% to " + number_text(most_percent) + "%", "5%");
  }
  return value / 100.0;
}

void refuse(const std::string& problem, const std::string& fix) {
  throw UserError(located("command line", 0, problem, fix));
}

std::string command_text(const std::string& command, const std::vector<std::string>& args) {
  std::string line = "batchscope " + command;
  for (const std::string& a : args) line += " " + a;
  return line;
}

namespace {

using Reader = void (*)(const cxxopts::ParseResult&, const std::string& name, SweepOverrides&);

struct ExperimentOptionSpec {
  ExperimentOption id;
  const char* flags;  // "m,model": the short and the long name
  const char* help;
  bool flag;          // a switch (true when given) rather than a value
  Reader read;
};

std::string text(const cxxopts::ParseResult& r, const std::string& name) { return r[name].as<std::string>(); }

// An experiment's whole-number option: refused here where it is no number, with the values it takes; a
// number out of range is refused by the experiment's own checks, which name the option and the range.
int64_t experiment_whole(const cxxopts::ParseResult& r, const std::string& name, int64_t least, int64_t most,
                         const std::string& or_word = "") {
  const std::string given = text(r, name);
  const std::optional<int64_t> value = whole_number(given);
  if (!value) {
    refuse_value(name, given,
                 or_word + "a whole number from " + std::to_string(least) + " to " + std::to_string(most),
                 std::to_string(least));
  }
  return *value;
}

// clang-format off
const ExperimentOptionSpec kExperimentOptions[] = {
  {ExperimentOption::Model, "m,model", "model name (batchscope models lists them), or a TorchScript file's path (give --input, or --input-kind tokens and --seq-len)", false,
   [](const auto& r, const auto& n, auto& o) { o.model = text(r, n); }},
  {ExperimentOption::Batch, "b,batch", "batch sizes: 1:70, 1:64:8 (a step), 1:60000:x2 (a factor), 1:max (up to the largest that fits) or 1,8,32", false,
   [](const auto& r, const auto& n, auto& o) { o.batch = text(r, n); }},
  {ExperimentOption::Device, "d,device", "cpu, cuda, cuda:N, or auto (the first GPU, else the CPU)", false,
   [](const auto& r, const auto& n, auto& o) { o.device = text(r, n); }},
  {ExperimentOption::Steps, "steps", "timed steps per batch size, or auto: timed until the median is known to within the ci width, within the min and max time", false,
   [](const auto& r, const auto& n, auto& o) {
     const std::string given = text(r, n);
     if (given == "auto") o.steps_auto = true;
     else o.timed_steps = experiment_whole(r, n, 1, limits::kMaxSteps, "auto or ");
   }},
  {ExperimentOption::CiWidth, "ci-width", "steps auto: stop once the median's 95% confidence interval is within this share of it, e.g. 2%; implies steps auto", false,
   [](const auto& r, const auto& n, auto& o) { o.ci_width = text(r, n); }},
  {ExperimentOption::MinTime, "min-time", "steps auto: seconds of timed steps at least, per batch size; implies steps auto", false,
   [](const auto& r, const auto& n, auto& o) { o.min_time = text(r, n); }},
  {ExperimentOption::MaxTime, "max-time", "steps auto: seconds of timed steps at most, per batch size; implies steps auto", false,
   [](const auto& r, const auto& n, auto& o) { o.max_time = text(r, n); }},
  {ExperimentOption::Warmup, "warmup", "untimed warm-up steps per batch size", false,
   [](const auto& r, const auto& n, auto& o) { o.warmup_steps = experiment_whole(r, n, 0, limits::kMaxSteps); }},
  {ExperimentOption::Phase, "phase", "train or infer", false,
   [](const auto& r, const auto& n, auto& o) { o.phase = text(r, n); }},
  {ExperimentOption::Precision, "precision", "fp32, fp16 or bf16 (autocast)", false,
   [](const auto& r, const auto& n, auto& o) { o.precision = text(r, n); }},
  {ExperimentOption::Optimizer, "optimizer", "sgd, momentum, adam or adamw (their state takes memory too; adamw decays weights by 0.01)", false,
   [](const auto& r, const auto& n, auto& o) { o.optimizer = text(r, n); }},
  {ExperimentOption::Lr, "lr", "learning rate", false,
   [](const auto& r, const auto& n, auto& o) { o.lr = real_option(r, n, 0, 1e6, /*least_excluded=*/true); }},
  {ExperimentOption::Input, "input", "shape of one sample, e.g. 3,224,224 (an image), 35 (tokens); default: the model's", false,
   [](const auto& r, const auto& n, auto& o) { o.input_shape = parse_input_shape(text(r, n)); }},
  {ExperimentOption::InputKind, "input-kind", "a TorchScript file's input: float (a tensor [batch, ...input], returning [batch, classes] logits) or tokens (token ids [batch, seq-len], returning [batch, positions, vocabulary] or [batch, classes] logits)", false,
   [](const auto& r, const auto& n, auto& o) { o.input_kind = text(r, n); }},
  {ExperimentOption::Vocab, "vocab", "a TorchScript file of tokens: the synthetic token ids lie below this; default: the output's vocabulary (a sequence classifier needs it)", false,
   [](const auto& r, const auto& n, auto& o) { o.vocab = experiment_whole(r, n, 1, limits::kMaxClasses); }},
  {ExperimentOption::SeqLen, "seq-len", "sequence models and TorchScript files of tokens: the sequence length (tokens or spectrogram frames)", false,
   [](const auto& r, const auto& n, auto& o) { o.seq_len = experiment_whole(r, n, 1, limits::kMaxDimension); }},
  {ExperimentOption::Classes, "classes", "number of classes (the vocabulary of a language model); default: the model's", false,
   [](const auto& r, const auto& n, auto& o) { o.classes = experiment_whole(r, n, 1, limits::kMaxClasses); }},
  {ExperimentOption::Data, "data", "synthetic, mnist, fashion-mnist, cifar10, cifar100, or a directory of one's files (it sets input and classes)", false,
   [](const auto& r, const auto& n, auto& o) { o.data = text(r, n); }},
  {ExperimentOption::Transfer, "transfer", "excluded or included: time the host-to-device copy of each batch", false,
   [](const auto& r, const auto& n, auto& o) { o.transfer = text(r, n); }},
  {ExperimentOption::Chunk, "chunk", "at most this many samples at a time: infer in slices, train with gradient accumulation over micro-batches; auto: every batch whole where it fits, and a size that runs out of memory whole in the largest even micro-batches that fit beside it (a search on the batch itself)", false,
   [](const auto& r, const auto& n, auto& o) {
     const std::string given = r[n].template as<std::string>();
     if (given == "auto") {
       o.chunk_auto = true;
     } else if (const std::optional<int64_t> chunk = whole_number(given)) {
       o.chunk = *chunk;
     } else {
       refuse_value(n, given, "auto or a whole number of samples", "256");
     }
   }},
  {ExperimentOption::Order, "order", "ascending or shuffled batch order", false,
   [](const auto& r, const auto& n, auto& o) { o.order = text(r, n); }},
  {ExperimentOption::Seed, "seed", "random seed", false,
   [](const auto& r, const auto& n, auto& o) { o.seed = seed_option(r, n); }},
  {ExperimentOption::ChannelsLast, "channels-last", "channels-last memory format", true,
   [](const auto& r, const auto& n, auto& o) { o.channels_last = r[n].template as<bool>(); }},
  {ExperimentOption::CudnnBenchmark, "cudnn-benchmark", "let cuDNN benchmark its algorithms per shape", true,
   [](const auto& r, const auto& n, auto& o) { o.cudnn_benchmark = r[n].template as<bool>(); }},
  {ExperimentOption::Tf32, "tf32", "default, on or off: whether fp32 convolutions and matrix products on a GPU may run in TF32; default is LibTorch's own setting, convolutions only", false,
   [](const auto& r, const auto& n, auto& o) { o.tf32 = text(r, n); }},
  {ExperimentOption::LossScale, "loss-scale", "auto, dynamic or off: train with dynamic loss scaling, as PyTorch's GradScaler (unscale, overflow check, skipped step); auto is dynamic for fp16, off otherwise", false,
   [](const auto& r, const auto& n, auto& o) { o.loss_scale = text(r, n); }},
  {ExperimentOption::LossScaleInit, "loss-scale-init", "dynamic loss scaling: the first scale (GradScaler's init_scale)", false,
   [](const auto& r, const auto& n, auto& o) { o.loss_scale_init = text(r, n); }},
  {ExperimentOption::LossScaleGrowthInterval, "loss-scale-growth-interval", "dynamic loss scaling: steps in a row without an overflow before the scale grows (GradScaler's growth_interval)", false,
   [](const auto& r, const auto& n, auto& o) { o.loss_scale_growth_interval = text(r, n); }},
  {ExperimentOption::Foreach, "foreach", "auto, on or off: the optimizer updates all parameters in a few multi-tensor operations, as PyTorch 2 does on a GPU, or in a loop over them; auto is on for training on a GPU", false,
   [](const auto& r, const auto& n, auto& o) { o.foreach = text(r, n); }},
  {ExperimentOption::Profile, "profile", "after each batch size's timed steps, profile more steps per layer and operator or kernel (profile.jsonl); the timed steps are unchanged", true,
   [](const auto& r, const auto& n, auto& o) { o.profile = r[n].template as<bool>(); }},
  {ExperimentOption::ProfileSteps, "profile-steps", "profiled steps per batch size with --profile", false,
   [](const auto& r, const auto& n, auto& o) { o.profile_steps = experiment_whole(r, n, 1, limits::kMaxProfileSteps); }},
  {ExperimentOption::Repeats, "repeats", "passes over the whole ladder, each in a new shuffled order; drift shows as spread between passes", false,
   [](const auto& r, const auto& n, auto& o) { o.repeats = experiment_whole(r, n, 1, limits::kMaxRepeats); }},
};
// clang-format on

// The value an experiment has where neither its file nor the command line gives one, as --help shows
// it; nullopt where the help says it already (the model's input and classes) or there is none.
std::optional<std::string> default_shown(ExperimentOption id) {
  const ExperimentConfig d;
  switch (id) {
    case ExperimentOption::Device: return d.device;
    case ExperimentOption::Steps: return std::to_string(d.timed_steps);
    case ExperimentOption::CiWidth: return number_text(AutoSteps{}.ci_width * 100) + "%";
    case ExperimentOption::MinTime: return number_text(AutoSteps{}.min_time_s);
    case ExperimentOption::MaxTime: return number_text(AutoSteps{}.max_time_s);
    case ExperimentOption::Warmup: return std::to_string(d.warmup_steps);
    case ExperimentOption::Phase: return to_string(d.phase);
    case ExperimentOption::Precision: return to_string(d.precision);
    case ExperimentOption::Optimizer: return to_string(d.optimizer.kind);
    case ExperimentOption::Lr: return number_text(d.optimizer.lr);
    case ExperimentOption::InputKind: return std::string(models::to_string(models::FileInput::Float));
    case ExperimentOption::Data: return d.data;
    case ExperimentOption::Transfer: return to_string(d.transfer);
    case ExperimentOption::Tf32: return to_string(d.tf32);
    case ExperimentOption::LossScale: return std::string("auto");
    case ExperimentOption::LossScaleInit: return number_text(d.loss_scaler.init_scale);
    case ExperimentOption::LossScaleGrowthInterval: return std::to_string(d.loss_scaler.growth_interval);
    case ExperimentOption::Foreach: return std::string("auto");
    case ExperimentOption::Chunk:
      return d.chunk == 0 ? std::string("none, every batch whole") : std::to_string(d.chunk);
    case ExperimentOption::Order: return to_string(d.order);
    case ExperimentOption::Seed: return std::to_string(d.seed);
    case ExperimentOption::ProfileSteps: return std::to_string(d.profile_steps);
    case ExperimentOption::Repeats: return std::to_string(d.repeats);
    default: return std::nullopt;
  }
}

std::string long_name(const char* flags) {
  const std::string f = flags;
  const size_t comma = f.find(',');
  return comma == std::string::npos ? f : f.substr(comma + 1);
}

}  // namespace

void add_experiment_options(cxxopts::Options& options, const std::vector<ExperimentOption>& which) {
  auto adder = options.add_options();
  for (ExperimentOption id : which) {
    for (const ExperimentOptionSpec& spec : kExperimentOptions) {
      if (spec.id != id) continue;
      // A switch is a bool with cxxopts' implicit "true"; every other value is read as text and
      // checked by the reader, so that a wrong one is named with its option.
      // The default is shown in the help only: a default value would hide whether the option was given,
      // and a given option replaces the file's value.
      const std::optional<std::string> shown = default_shown(id);
      const std::string help = shown ? std::string(spec.help) + " (default: " + *shown + ")" : spec.help;
      if (spec.flag) {
        adder(spec.flags, help, cxxopts::value<bool>());
      } else {
        adder(spec.flags, help, cxxopts::value<std::string>());
      }
    }
  }
}

void read_experiment_options(const cxxopts::ParseResult& result, const std::vector<ExperimentOption>& which,
                             SweepOverrides& into) {
  for (const ExperimentOptionSpec& spec : kExperimentOptions) {
    if (std::find(which.begin(), which.end(), spec.id) == which.end()) continue;
    const std::string name = long_name(spec.flags);
    if (result.count(name)) spec.read(result, name, into);
  }
}

std::string model_option(const cxxopts::ParseResult& result) {
  if (!result.count("model")) refuse("no model given", "pass --model NAME, one of " + models::known_model_names());
  const std::string model = result["model"].as<std::string>();
  if (models::is_model_file_name(model)) {
    try {
      models::torchscript_model(model);
    } catch (const std::invalid_argument& error) {
      refuse(std::string("--model: ") + error.what(), "");
    }
  } else if (models::find_model(model) == nullptr) {
    refuse("--model " + yaml_fields::shown(printable(model)) + " is not a known model",
           models::unknown_model_fix(model));
  }
  return model;
}

void apply_threads_option(const cxxopts::ParseResult& result) {
  if (!result.count("threads")) return;  // main() applied the default
  cpu_threads::apply(static_cast<int>(whole_option(result, "threads", 1, kMaxThreads)), cpu_threads::threading_environment());
}

std::string threads_help(const std::string& what) {
  return what + " (default: one per physical core this process may use, " +
         std::to_string(cpu_threads::usable_physical_cores(cpu_threads::allowed_cpus())) +
         " here; OMP_NUM_THREADS or MKL_NUM_THREADS decides where one is set)";
}

std::vector<int64_t> batch_list_option(const cxxopts::ParseResult& result, const std::string& name) {
  const std::string text = result[name].as<std::string>();
  if (text.find_first_of(",:") == std::string::npos)
    return {whole_option(result, name, 1, limits::kMaxBatchSize)};
  std::vector<int64_t> sizes;
  try {
    sizes = parse_batch_spec(text);
  } catch (const std::invalid_argument& bad) {
    refuse("--" + name + " " + text + ": " + bad.what(),
           "give one size (64) or several (32,128,512 or 32:4096:x4)");
  }
  for (const int64_t b : sizes) {
    if (b < 1 || b > limits::kMaxBatchSize)
      refuse("--" + name + " " + text + " holds " + std::to_string(b),
             "give sizes from 1 to " + std::to_string(limits::kMaxBatchSize));
  }
  return sizes;
}

std::vector<int64_t> parse_input_shape(const std::string& text) {
  std::vector<int64_t> shape;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v <= 0) {
      throw UserError(located("command line", 0, "--input " + text + " is not a shape",
                              "give positive sizes separated by commas, e.g. --input 3,224,224"));
    }
    shape.push_back(v);
  }
  if (shape.empty()) {
    throw UserError(located("command line", 0, "--input is empty", "give a shape such as --input 3,224,224"));
  }
  return shape;
}

int64_t parse_memory_limit(const std::string& text) {
  try {
    return parse_memory_size(text);
  } catch (const std::invalid_argument& error) {
    // The parser's sentence already says what a size looks like.
    throw UserError(located("command line", 0, std::string("--memory-limit ") + error.what(), ""));
  }
}

int64_t parse_gpu_memory_limit(const std::string& text, int index) {
  const int64_t bytes = parse_memory_limit(text);
  const int64_t total = gpu::device_info(index).at("total_memory_bytes").get<int64_t>();
  try {
    gpu::cap_fraction(bytes, total);
  } catch (const std::invalid_argument& error) {
    throw UserError(
        located("command line", 0,
                "--memory-limit " + text + " caps cuda:" + std::to_string(index) + ", and " + error.what(),
                "give at most " + format_memory_size(total)));
  }
  return bytes;
}

nlohmann::json apply_memory_limit(const std::string& text, const std::vector<std::string>& devices) {
  nlohmann::json limits = nlohmann::json::object();
  for (const std::string& name : devices) {
    if (limits.contains(name)) continue;
    const torch::Device device(name);
    if (device.is_cuda()) {
      const int index = device.has_index() ? device.index() : 0;
      const int64_t bytes = parse_gpu_memory_limit(text, index);
      gpu::set_memory_cap(index, bytes);
      limits[name] = bytes;
    } else {
      cpu_memory::install();
      cpu_memory::set_limit(parse_memory_limit(text));
      limits[name] = *cpu_memory::limit();
    }
  }
  return limits;
}

namespace {

std::atomic<bool> stop_flag{false};
const char* stop_what = "this step";

extern "C" void request_stop(int signal_number) {
  stop_flag.store(true);
  // write() alone: it is safe in a signal handler, where stdio is not.
  const auto say = [](const char* text) {
    const ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
    (void)ignored;
  };
  say("\nbatchscope: stopping after ");
  say(stop_what);
  say(" (Ctrl-C again to stop now)\n");
  std::signal(signal_number, SIG_DFL);
}

}  // namespace

const std::atomic<bool>& stop_requested() { return stop_flag; }

void stop_on_signals(const char* what) {
  stop_what = what;
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
}

}  // namespace batchscope::app
