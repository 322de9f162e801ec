// Experiment files. The top level holds `experiments:` (a list of experiments), optionally
// `defaults:` (any experiment key except name, applied to every experiment unless the experiment
// sets it; a key replaces the default's value whole, an optimizer map included) and `device:`
// (the same as defaults: device). A file with a single experiment may put its keys at the top
// level instead of under `experiments:`. Experiment keys, with their defaults:
//   name             "<model>_<phase>_<precision>"; letters, digits, _ - .; unique in the file
//   model            required; a name from the model registry, or a TorchScript file's path
//   input_kind       a TorchScript file's: float (a float tensor [batch, ...input] to [batch, classes]) |
//                    tokens (token ids [batch, seq_len] to [batch, positions, vocabulary], or to
//                    [batch, classes] for a sequence classifier) (float)
//   vocab            a TorchScript file of tokens: its synthetic token ids lie below it (the output's
//                    vocabulary; a sequence classifier needs it)
//   input            one sample's shape without the batch dimension: [C, H, W] for images,
//                    [sequence length] for lstm_lm and transformer, [1, frequency bins, frames]
//                    for deepspeech2; the model's default input
//   seq_len          sequence models: the sequence length (tokens, or spectrogram frames), set in
//                    the input shape
//   classes          the model's default class count
//   batch            required; "70", "1:70", "1:64:8", "1:60000:x2" (growing by a factor), "1:max"
//                    (up to the largest size that fits, found when the sweep starts; "1:max:8",
//                    "1:max:x2"), "1,8,32", a list [1, 8, 32] or a map {from: 1, to: 70, step: 1}
//                    (step defaults to 1; factor: 2 instead of step; to: max)
//   phase            train | infer (train)
//   optimizer        sgd | momentum | adam | adamw, or a map {type: sgd, lr: 0.01, momentum: 0.9,
//                    weight_decay: 0, betas: [0.9, 0.999], eps: 1e-8} (sgd; adamw's weight_decay is
//                    0.01, decoupled); keys the type does not use are ignored, except momentum with
//                    sgd, which is refused
//   precision        fp32 | fp16 | bf16 (fp32)
//   channels_last, cudnn_benchmark   true | false (false)
//   tf32             default | on | off: whether fp32 convolutions and matrix products on a GPU may run in
//                    TF32 (default: LibTorch's, convolutions only)
//   loss_scale       auto | dynamic | off: training scales its loss dynamically, as PyTorch's GradScaler
//                    does (auto: fp16 training does, other precisions do not); or a map {type: auto,
//                    init_scale: 65536, growth_factor: 2, backoff_factor: 0.5, growth_interval: 2000}
//                    with GradScaler's arguments (its defaults shown); settings beside type: off are
//                    refused, and where auto leaves the loss unscaled they are ignored
//   warmup           untimed steps per batch size, >= 0 (5)
//   steps            timed steps per batch size, >= 1 (20), or auto: timed until the median's 95%
//                    confidence interval is within ±ci_width of it and min_time has passed, or
//                    until max_time
//   ci_width         steps: auto only: the interval's half-width in percent of the median (1%)
//   min_time         steps: auto only: seconds of timed steps at least, per batch size (0)
//   max_time         steps: auto only: seconds of timed steps at most, per batch size (10)
//   order            ascending | shuffled (ascending)
//   data             synthetic | mnist | fashion-mnist | cifar10 | cifar100 | a directory of one's files
//                    (synthetic); real data sets input and classes to the dataset's: [1, 28, 28] and 10
//                    for MNIST's, [3, 32, 32] and 10 or 100 for CIFAR's (image models only)
//   transfer         excluded | included: whether each step's time includes copying its batch
//                    from host memory to the device (excluded)
//   chunk            at most this many samples at a time (whole batch): infer runs its forward pass over
//                    slices, train accumulates gradients over micro-batches before one optimizer step
//   seed             a whole number >= 0 (0)
//   profile          true | false (false): after the timed steps of each batch size, profile_steps
//                    more steps under LibTorch's profiler, recorded per layer and per operator or
//                    kernel in profile.jsonl; the timed steps are not changed by it
//   profile_steps    profiled steps per batch size, 1 to 100 (3)
//   repeats          passes over the whole ladder, 1 to 100 (1); with more than one, each pass runs
//                    every batch size in its own shuffled order, and records carry their pass
//   device           cpu | cuda | cuda:N | auto (auto); auto is resolved when the sweep runs
// Command-line overrides replace the key in every experiment, after defaults.
#include "lib/config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "lib/common/errors.h"
#include "lib/common/micro_batches.h"
#include "lib/common/words.h"
#include "lib/config/experiment_reader.h"
#include "lib/config/yaml_fields.h"
#include "models/registry.h"

namespace batchscope {

using yaml_fields::collect;
using yaml_fields::describe;
using yaml_fields::Entries;
using yaml_fields::Entry;
using yaml_fields::fail;
using yaml_fields::line_of;
using yaml_fields::set_entry;
using yaml_fields::shown;
using yaml_fields::Where;

namespace {

const std::vector<std::string> kTopKeys = {"experiments", "defaults", "device"};

// yaml-cpp puts an error found at the end of the text on the line after it (an unclosed [ on the
// last line, say); the last line with content is where the user has to look.
int error_line(const std::string& text, int mark_line) {
  int lines = 0, last_with_content = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    ++lines;
    if (line.find_first_not_of(" \t\r") != std::string::npos) last_with_content = lines;
  }
  return mark_line + 1 > lines ? last_with_content : mark_line + 1;
}

void check_unique_names(const SweepConfig& sweep, const std::vector<int>& lines) {
  for (size_t i = 0; i < sweep.experiments.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (sweep.experiments[i].name == sweep.experiments[j].name) {
        fail({sweep.source, lines[i], ""},
             "experiment name " + sweep.experiments[i].name + " is already used by the experiment at line " +
                 std::to_string(lines[j]),
             "give each experiment a distinct name (the name key)");
      }
    }
  }
}

bool is_device_string(const std::string& device) {
  if (device == "cpu" || device == "cuda" || device == "auto") return true;
  const std::string prefix = "cuda:";
  return device.size() > prefix.size() && device.compare(0, prefix.size(), prefix) == 0 &&
         std::all_of(device.begin() + prefix.size(), device.end(),
                     [](char c) { return c >= '0' && c <= '9'; }) &&
         device.size() - prefix.size() <= 4;
}

}  // namespace

std::string check_device_string(const std::string& device) {
  if (is_device_string(device)) return "";
  return "device " + shown(device) + " is not recognised; " + device_fix(device);
}

std::string device_fix(const std::string& device) {
  const std::string use = "use cpu, cuda, cuda:N with N a GPU index such as 0, or auto";
  // As other tools write them: GPU, gpu:0, cuda0, CUDA:1.
  std::string meant = lowercase(device);
  if (meant.rfind("gpu", 0) == 0) meant = "cuda" + meant.substr(3);
  if (meant.size() > 4 && meant.rfind("cuda", 0) == 0 && meant[4] != ':') meant.insert(4, ":");
  return is_device_string(meant) && meant != device ? "did you mean " + meant + "? " + use : use;
}

const models::ModelSpec* experiment_model(const ExperimentConfig& e) {
  if (!e.model_file) return models::find_model(e.model);
  return models::find_model(e.model, e.model_file->input, e.model_file->vocab);
}

const models::ModelSpec& known_experiment_model(const ExperimentConfig& e) {
  const models::ModelSpec* spec = experiment_model(e);
  if (spec == nullptr)
    throw UserError(
        located_value(e, "model", e.model + " is not a known model", models::unknown_model_fix(e.model)));
  return *spec;
}

int64_t smallest_step_batch(const ExperimentConfig& e) {
  if (e.phase != Phase::Train) return 1;
  return models::smallest_train_batch(known_experiment_model(e), e.input_shape, e.classes);
}

int64_t smallest_chunk(const ExperimentConfig& e, int64_t batch) {
  return smallest_chunk_for(batch, smallest_step_batch(e));
}

std::string input_key(const ExperimentConfig& e) {
  for (const char* key : {"input", "seq_len", "data"}) {
    if (e.origins.count(key)) return key;
  }
  return "model";
}

double experiment_forward_flops(const ExperimentConfig& e) {
  const models::ModelSpec& spec = known_experiment_model(e);
  try {
    return spec.forward_flops(e.input_shape, e.classes);
  } catch (const std::invalid_argument& bad) {
    std::string reason = bad.what();  // a sentence of the model's own that already says what it needs
    if (!reason.empty() && reason.back() == '.') reason.pop_back();
    throw UserError(located_value(e, input_key(e), reason, ""));
  }
}

std::string located_value(const ExperimentConfig& e, const std::string& key, const std::string& problem,
                          const std::string& fix) {
  auto found = e.origins.find(key);
  if (found == e.origins.end() || found->second.source.empty()) {
    found = e.origins.find("experiment");
    if (found == e.origins.end()) return located("experiment " + e.name, 0, problem, fix);
    // A default the experiment did not set: its own line, and its name where several share a file.
    const bool named = found->second.line > 0;
    return located(found->second.source, found->second.line, (named ? found->second.label + ": " : "") + problem,
                   fix);
  }
  const ValueOrigin& o = found->second;
  const bool option = o.line == 0 && o.label.rfind("--", 0) == 0;
  return located(o.source, o.line, (option ? o.label + ": " : "") + problem, fix);
}

namespace {

constexpr const char* kNoExperimentsFix =
    "add experiments: with a list of experiments, each with at least model: and batch:";

// The document's root: a map of keys, or a sentence naming the line where the YAML breaks.
YAML::Node load_root(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    fail({source, error_line(yaml_text, e.mark.line), ""}, "the YAML is malformed (" + e.msg + ")",
         "fix the syntax on this line or the one before");
  }
  // A second document (after ---) would be read by nothing: its experiments would silently not run.
  if (const std::optional<int> second = yaml_fields::second_document_line(yaml_text)) {
    fail({source, *second, ""}, "a second YAML document begins here (after ---), which would be ignored",
         "put every experiment in one document, under one experiments: list");
  }
  if (root.IsNull()) fail({source, 0, ""}, "the file has no experiments", kNoExperimentsFix);
  if (!root.IsMap()) {
    fail({source, line_of(root), ""}, "the top level is " + describe(root) + " but must be a map of keys",
         "start with experiments: (or one experiment's keys such as model:)");
  }
  return root;
}

// What every experiment starts from: the keys under defaults:, and a top-level device:.
Entries read_defaults(const Entries& top, const std::string& source) {
  Entries defaults;
  if (top.count("defaults") && !top.at("defaults").node.IsNull()) {
    const Entry& d = top.at("defaults");
    if (!d.node.IsMap())
      fail(d.where, "defaults is " + describe(d.node) + " but must be a map", "indent keys under it");
    collect(d.node, source, kExperimentKeys, "defaults", defaults);
    if (defaults.count("name")) {
      fail(defaults.at("name").where, "name cannot be a default, since every experiment needs its own",
           "move name: into the experiments");
    }
  }
  if (top.count("device")) {
    if (defaults.count("device")) {
      fail(top.at("device").where, "device is given both here and under defaults:", "keep one of them");
    }
    set_entry(defaults, "device", top.at("device"));
  }
  return defaults;
}

}  // namespace

SweepConfig parse_sweep_config(const std::string& yaml_text, const std::string& source,
                               const SweepOverrides& overrides) {
  const YAML::Node root = load_root(yaml_text, source);
  std::vector<std::string> top_keys = kTopKeys;
  for (const std::string& key : kExperimentKeys)
    if (!std::count(top_keys.begin(), top_keys.end(), key)) top_keys.push_back(key);
  Entries top;
  collect(root, source, top_keys, "the top level", top);

  const Entries defaults = read_defaults(top, source);
  SweepConfig sweep;
  sweep.source = source;
  std::vector<int> lines;
  const auto add = [&](Entries entries, const Where& at) {
    apply_overrides(overrides, entries);
    sweep.experiments.push_back(read_experiment(entries, at, overrides));
    lines.push_back(entries.count("name") ? entries.at("name").where.line : at.line);
  };

  const auto experiment_key = std::find_if(top.begin(), top.end(), [](const auto& item) {
    return std::count(kTopKeys.begin(), kTopKeys.end(), item.first) == 0;
  });
  if (top.count("experiments")) {
    if (experiment_key != top.end()) {
      fail(experiment_key->second.where,
           experiment_key->first + " cannot sit at the top level beside experiments",
           "move it under defaults: to apply it to every experiment");
    }
    const Entry& list = top.at("experiments");
    if (list.node.IsNull() || (list.node.IsSequence() && list.node.size() == 0)) {
      fail(list.where, "experiments is empty", kNoExperimentsFix);
    }
    if (!list.node.IsSequence()) {
      fail(list.where, "experiments is " + describe(list.node) + " but must be a list",
           "start each experiment with - on its own line");
    }
    for (const YAML::Node& item : list.node) {
      const Where at{source, line_of(item), ""};
      if (!item.IsMap()) {
        fail(at, "an experiment is " + describe(item) + " but must be a map of keys",
             "write keys like model: vgg16");
      }
      Entries entries = defaults;
      collect(item, source, kExperimentKeys, "an experiment", entries);
      add(entries, at);
    }
  } else {
    Entries entries = defaults;
    collect(root, source, kExperimentKeys, "the top level", entries, {"defaults", "device"});
    if (experiment_key == top.end()) {
      fail({source, line_of(root), ""}, "the file has no experiments", kNoExperimentsFix);
    }
    add(entries, {source, line_of(root), ""});
  }
  check_unique_names(sweep, lines);
  return sweep;
}

SweepConfig load_sweep_config(const std::string& path, const SweepOverrides& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UserError(located(path, 0, "this is a directory", "give the path of a YAML experiment file"));
  }
  std::ifstream in(path);
  if (!in) {
    throw UserError(located(path, 0, std::string("cannot read the file (") + std::strerror(errno) + ")",
                            "check the path and its permissions"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_sweep_config(text.str(), path, overrides);
}

SweepConfig sweep_from_overrides(const SweepOverrides& overrides) {
  if (!overrides.model) {
    throw UserError(
        located(kCommandLine, 0, "no model given",
                "pass --model NAME (one of " + models::known_model_names() + ") or a config file"));
  }
  Entries entries;
  apply_overrides(overrides, entries);
  SweepConfig sweep;
  sweep.source = kCommandLine;
  sweep.experiments.push_back(read_experiment(entries, {kCommandLine, 0, ""}, overrides));
  return sweep;
}

}  // namespace batchscope
