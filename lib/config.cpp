// Experiment files. The top level holds `experiments:` (a list of experiments), optionally
// `defaults:` (any experiment key except name, applied to every experiment unless the experiment
// sets it; a key replaces the default's value whole, an optimizer map included) and `device:`
// (the same as defaults: device). A file with a single experiment may put its keys at the top
// level instead of under `experiments:`. Experiment keys, with their defaults:
//   name             "<model>_<phase>_<precision>"; letters, digits, _ - .; unique in the file
//   model            required; a name from the model registry
//   input            [C, H, W] without the batch dimension; the model's default input
//   classes          the model's default class count
//   batch            required; "70", "1:70", "1:64:8", "1,8,32", a list [1, 8, 32] or a map
//                    {from: 1, to: 70, step: 1} (step defaults to 1)
//   phase            train | infer (train)
//   optimizer        sgd | momentum | adam, or a map {type: sgd, lr: 0.01, momentum: 0.9,
//                    weight_decay: 0, betas: [0.9, 0.999], eps: 1e-8} (sgd); keys the type
//                    does not use are ignored, except momentum with sgd, which is refused
//   precision        fp32 | fp16 | bf16 (fp32)
//   channels_last, cudnn_benchmark   true | false (false)
//   warmup           untimed steps per batch size, >= 0 (5)
//   steps            timed steps per batch size, >= 1 (20)
//   order            ascending | shuffled (ascending)
//   data             synthetic, the only kind so far (synthetic)
//   seed             a whole number >= 0 (0)
//   device           cpu | cuda | cuda:N | auto (auto); auto is resolved when the sweep runs
// Command-line overrides replace the key in every experiment, after defaults.
#include "lib/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "lib/batch_spec.h"
#include "lib/errors.h"
#include "models/registry.h"

namespace batchscope {
namespace {

const char* const kCommandLine = "command line";

const std::vector<std::string> kExperimentKeys = {
    "name",          "model",           "input",  "classes", "batch", "phase", "optimizer", "precision",
    "channels_last", "cudnn_benchmark", "warmup", "steps",   "order", "data",  "seed",      "device"};
const std::vector<std::string> kTopKeys = {"experiments", "defaults", "device"};
const std::vector<std::string> kOptimizerKeys = {"type", "lr", "momentum", "weight_decay", "betas", "eps"};
const std::vector<std::string> kBatchKeys = {"from", "to", "step"};

// Names people reach for from other tools, too far from ours for the edit distance to catch.
const std::map<std::string, std::string> kAliases = {
    {"batch_size", "batch"},    {"batch_sizes", "batch"},
    {"batches", "batch"},       {"input_shape", "input"},
    {"shape", "input"},         {"num_classes", "classes"},
    {"dtype", "precision"},     {"mode", "phase"},
    {"iterations", "steps"},    {"timed_steps", "steps"},
    {"warmup_steps", "warmup"}, {"learning_rate", "lr"},
    {"optim", "optimizer"},     {"experiment", "experiments"},
    {"default", "defaults"}};

template <typename E>
using NameTable = std::vector<std::pair<std::string, E>>;
const NameTable<Phase> kPhases = {{"train", Phase::Train}, {"infer", Phase::Infer}};
const NameTable<Precision> kPrecisions = {
    {"fp32", Precision::FP32}, {"fp16", Precision::FP16}, {"bf16", Precision::BF16}};
const NameTable<OptimizerKind> kOptimizers = {
    {"sgd", OptimizerKind::SGD}, {"momentum", OptimizerKind::Momentum}, {"adam", OptimizerKind::Adam}};
const NameTable<BatchOrder> kOrders = {{"ascending", BatchOrder::Ascending},
                                       {"shuffled", BatchOrder::Shuffled}};

template <typename E>
std::string name_of(const NameTable<E>& table, E value) {
  for (const auto& [text, v] : table)
    if (v == value) return text;
  throw std::logic_error("an enum value has no name");
}

template <typename E>
std::optional<E> value_of(const NameTable<E>& table, const std::string& text) {
  for (const auto& [t, v] : table)
    if (t == text) return v;
  return std::nullopt;
}

template <typename E>
std::vector<std::string> names(const NameTable<E>& table) {
  std::vector<std::string> out;
  for (const auto& entry : table) out.push_back(entry.first);
  return out;
}

std::string join(const std::vector<std::string>& words, const std::string& last = ", ") {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? last : ", ";
    out += words[i];
  }
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The fix for a word that is not among `accepted`, suggesting the obvious one when there is one.
std::string choose_from(const std::string& word, const std::vector<std::string>& accepted,
                        const std::string& what) {
  std::string best;
  const auto alias = kAliases.find(word);
  if (alias != kAliases.end() && std::count(accepted.begin(), accepted.end(), alias->second))
    best = alias->second;
  size_t best_distance = 3;
  for (const std::string& candidate : accepted) {
    const size_t d = edit_distance(word, candidate);
    if (best.empty() && d < best_distance) best = candidate, best_distance = d;
  }
  if (best.empty()) return "use one of the " + what + ": " + join(accepted);
  return "did you mean " + best + " (" + what + ": " + join(accepted) + ")";
}

// Where a value came from, for messages: `label` is the YAML key or the command-line flag.
struct Where {
  std::string source;
  int line = 0;
  std::string label;
};

[[noreturn]] void fail(const Where& where, const std::string& problem, const std::string& fix) {
  throw UserError(located(where.source, where.line, problem, fix));
}

int line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

// A value inside `parent` (a list element, a nested key); values from the command line have no line.
Where inside(const Where& parent, const YAML::Node& node, const std::string& label) {
  return {parent.source, parent.line == 0 ? 0 : line_of(node), label};
}

std::string shown(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_of(" \t") == std::string::npos;
  return plain ? text : "\"" + text + "\"";
}

std::string describe(const YAML::Node& node) {
  if (node.IsNull()) return "empty";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return shown(node.Scalar());
}

struct Entry {
  YAML::Node node;
  Where where;
};
using Entries = std::map<std::string, Entry>;

std::string get_string(const Entry& e, const std::string& fix) {
  if (!e.node.IsScalar())
    fail(e.where, e.where.label + " is " + describe(e.node) + " but must be a word", fix);
  return e.node.Scalar();
}

int64_t get_int(const Entry& e, int64_t min, int64_t max, const std::string& fix) {
  int64_t value = 0;
  const std::string text = e.node.IsScalar() ? e.node.Scalar() : "";
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    fail(e.where, e.where.label + " is " + describe(e.node) + " but must be a whole number", fix);
  }
  if (value < min || value > max) {
    fail(e.where, e.where.label + " " + text + (value < min ? " is too small" : " is too large"), fix);
  }
  return value;
}

double get_double(const Entry& e, double min, bool min_allowed, double max, const std::string& fix) {
  const std::string text = e.node.IsScalar() ? e.node.Scalar() : "";
  char* end = nullptr;
  const double value = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    fail(e.where, e.where.label + " is " + describe(e.node) + " but must be a number", fix);
  }
  if (value < min || (value == min && !min_allowed) || value >= max) {
    fail(e.where, e.where.label + " " + text + (value >= max ? " is too large" : " is too small"), fix);
  }
  return value;
}

bool get_bool(const Entry& e) {
  bool value = false;
  if (!e.node.IsScalar() || !YAML::convert<bool>::decode(e.node, value)) {
    fail(e.where, e.where.label + " is " + describe(e.node) + " but must be true or false",
         "write true or false");
  }
  return value;
}

template <typename E>
E get_enum(const Entry& e, const NameTable<E>& table) {
  const std::string fix = "use " + join(names(table), " or ");
  const std::optional<E> value = value_of(table, get_string(e, fix));
  if (!value) fail(e.where, e.where.label + " " + shown(e.node.Scalar()) + " is not recognised", fix);
  return *value;
}

// Adds a YAML map's entries over those already in `into`, rejecting unknown and repeated keys.
void collect(const YAML::Node& map, const std::string& source, const std::vector<std::string>& accepted,
             const std::string& context, Entries& into, const std::set<std::string>& skip = {}) {
  std::map<std::string, int> seen;
  for (const auto& item : map) {
    const Where key_at{source, line_of(item.first), ""};
    if (!item.first.IsScalar())
      fail(key_at, "a key in " + context + " is not a plain word", "write key: value");
    const std::string key = item.first.Scalar();
    if (seen.count(key)) {
      fail(key_at,
           key + " appears twice in " + context + " (first at line " + std::to_string(seen[key]) + ")",
           "keep one of them");
    }
    seen[key] = key_at.line;
    if (skip.count(key)) continue;
    if (!std::count(accepted.begin(), accepted.end(), key)) {
      fail(key_at, "unknown key " + shown(key) + " in " + context,
           choose_from(key, accepted, "accepted keys"));
    }
    const int value_line = item.second.IsNull() ? key_at.line : line_of(item.second);
    into.insert_or_assign(key, Entry{item.second, Where{source, value_line, key}});
  }
}

void apply_overrides(const SweepOverrides& o, Entries& into) {
  const auto put = [&](const char* key, const char* flag, const YAML::Node& value) {
    into.insert_or_assign(key, Entry{value, Where{kCommandLine, 0, flag}});
  };
  if (o.model) put("model", "--model", YAML::Node(*o.model));
  if (o.device) put("device", "--device", YAML::Node(*o.device));
  if (o.batch) put("batch", "--batch", YAML::Node(*o.batch));
  if (o.phase) put("phase", "--phase", YAML::Node(*o.phase));
  if (o.precision) put("precision", "--precision", YAML::Node(*o.precision));
  if (o.order) put("order", "--order", YAML::Node(*o.order));
  if (o.data) put("data", "--data", YAML::Node(*o.data));
  if (o.input_shape) put("input", "--input", YAML::Node(*o.input_shape));
  if (o.classes) put("classes", "--classes", YAML::Node(*o.classes));
  if (o.warmup_steps) put("warmup", "--warmup", YAML::Node(*o.warmup_steps));
  if (o.timed_steps) put("steps", "--steps", YAML::Node(*o.timed_steps));
  if (o.seed) put("seed", "--seed", YAML::Node(*o.seed));
  if (o.channels_last) put("channels_last", "--channels-last", YAML::Node(*o.channels_last));
  if (o.cudnn_benchmark) put("cudnn_benchmark", "--cudnn-benchmark", YAML::Node(*o.cudnn_benchmark));
}

std::vector<int64_t> get_batch(const Entry& e) {
  const std::string fix = "write batch as 1:70, 1:64:8, 1,8,32, [1, 8, 32] or {from: 1, to: 70, step: 1}";
  if (e.node.IsScalar()) {
    try {
      return parse_batch_spec(e.node.Scalar());
    } catch (const std::invalid_argument& error) {
      fail(e.where, e.where.label + " " + error.what(), "");
    }
  }
  if (e.node.IsSequence() && e.node.size() > 0) {
    std::vector<int64_t> sizes;
    for (const YAML::Node& element : e.node) {
      const Entry size{element, inside(e.where, element, "batch size")};
      sizes.push_back(get_int(size, 1, INT64_MAX, "give batch sizes of 1 or more"));
      if (std::count(sizes.begin(), sizes.end(), sizes.back()) > 1) {
        fail(size.where, "batch size " + std::to_string(sizes.back()) + " is listed twice",
             "give each size once");
      }
    }
    return sizes;
  }
  if (!e.node.IsMap()) {
    fail(e.where, e.where.label + " is " + (e.node.IsSequence() ? "an empty list" : describe(e.node)), fix);
  }
  Entries range;
  collect(e.node, e.where.source, kBatchKeys, "batch", range);
  for (const char* key : {"from", "to"}) {
    if (!range.count(key)) fail(e.where, "batch has no " + std::string(key), fix);
  }
  const std::string sizes = "give sizes of 1 or more";
  const int64_t from = get_int(range.at("from"), 1, INT64_MAX, sizes);
  const int64_t to = get_int(range.at("to"), 1, INT64_MAX, sizes);
  const int64_t step =
      range.count("step") ? get_int(range.at("step"), 1, INT64_MAX, "give a step of 1 or more") : 1;
  if (from > to)
    fail(e.where, "batch from " + std::to_string(from) + " to " + std::to_string(to) + " is inverted",
         "give from <= to");
  try {
    return batch_range(from, to, step);
  } catch (const std::invalid_argument& error) {
    fail(e.where, e.where.label + " " + error.what(), "");
  }
}

std::vector<int64_t> get_input(const Entry& e, const models::ModelSpec& spec) {
  std::vector<std::string> dims;
  for (int64_t d : spec.default_input) dims.push_back(std::to_string(d));
  const std::string fix = "give " + std::to_string(dims.size()) + " sizes of 1 or more without the batch " +
                          "dimension, like " + spec.name + "'s default [" + join(dims) + "]";
  if (!e.node.IsSequence())
    fail(e.where, e.where.label + " is " + describe(e.node) + " but must be a list", fix);
  std::vector<int64_t> shape;
  for (const YAML::Node& element : e.node) {
    shape.push_back(
        get_int(Entry{element, inside(e.where, element, e.where.label + " size")}, 1, INT64_MAX, fix));
  }
  if (shape.size() != spec.default_input.size()) {
    fail(e.where, e.where.label + " has " + std::to_string(shape.size()) + " sizes for " + spec.name, fix);
  }
  return shape;
}

OptimizerConfig get_optimizer(const Entries& entries, const SweepOverrides& o) {
  OptimizerConfig opt;
  const auto found = entries.find("optimizer");
  if (found != entries.end() && found->second.node.IsMap()) {
    const Entry& e = found->second;
    Entries keys;
    collect(e.node, e.where.source, kOptimizerKeys, "optimizer", keys);
    if (keys.count("type")) opt.kind = get_enum(keys.at("type"), kOptimizers);
    // Keys another type uses are kept and ignored, so one optimizer map can serve every type; only
    // momentum under plain sgd is refused, since it reads as SGD with momentum and would not be.
    if (keys.count("momentum") && opt.kind == OptimizerKind::SGD) {
      fail(keys.at("momentum").where, "momentum does not apply to optimizer sgd",
           "set type: momentum for SGD with momentum, or remove momentum");
    }
    if (keys.count("lr"))
      opt.lr = get_double(keys.at("lr"), 0, false, INFINITY, "give a learning rate above 0");
    if (keys.count("momentum")) {
      opt.momentum =
          get_double(keys.at("momentum"), 0, true, 1, "give a momentum from 0 up to (not including) 1");
    }
    if (keys.count("weight_decay")) {
      opt.weight_decay =
          get_double(keys.at("weight_decay"), 0, true, INFINITY, "give a weight_decay of 0 or more");
    }
    if (keys.count("eps")) opt.eps = get_double(keys.at("eps"), 0, false, INFINITY, "give an eps above 0");
    if (keys.count("betas")) {
      const Entry& betas = keys.at("betas");
      const std::string fix = "give two numbers from 0 up to (not including) 1, like [0.9, 0.999]";
      if (!betas.node.IsSequence())
        fail(betas.where, "betas is " + describe(betas.node) + " but must be a list", fix);
      if (betas.node.size() != 2) {
        fail(betas.where, "betas must hold two numbers, not " + std::to_string(betas.node.size()), fix);
      }
      opt.beta1 =
          get_double(Entry{betas.node[0], inside(betas.where, betas.node[0], "beta1")}, 0, true, 1, fix);
      opt.beta2 =
          get_double(Entry{betas.node[1], inside(betas.where, betas.node[1], "beta2")}, 0, true, 1, fix);
    }
  } else if (found != entries.end()) {
    opt.kind = get_enum(found->second, kOptimizers);
  }
  if (o.optimizer)
    opt.kind = get_enum(Entry{YAML::Node(*o.optimizer), {kCommandLine, 0, "--optimizer"}}, kOptimizers);
  if (o.lr) {
    opt.lr = get_double(Entry{YAML::Node(*o.lr), {kCommandLine, 0, "--lr"}}, 0, false, INFINITY,
                        "give a learning rate above 0");
  }
  return opt;
}

// Turns one experiment's merged entries into a checked ExperimentConfig; `at` is the experiment.
ExperimentConfig resolve(const Entries& entries, const Where& at, const SweepOverrides& overrides) {
  const bool cli = at.source == kCommandLine;
  const auto has = [&](const char* key) { return entries.count(key) > 0; };
  const auto entry = [&](const char* key) -> const Entry& { return entries.at(key); };
  ExperimentConfig c;

  if (!has("model")) {
    fail(at, cli ? "no model given" : "the experiment has no model",
         std::string(cli ? "pass --model NAME" : "add model: NAME") + " with one of " +
             models::known_model_names());
  }
  c.model = get_string(entry("model"), "give a model name");
  const models::ModelSpec* spec = models::find_model(c.model);
  if (!spec) {
    std::vector<std::string> known;
    for (const auto& m : models::all_models()) known.push_back(m.name);
    fail(entry("model").where, entry("model").where.label + " " + shown(c.model) + " is not a known model",
         choose_from(c.model, known, "known models"));
  }
  c.input_shape = has("input") ? get_input(entry("input"), *spec) : spec->default_input;
  c.classes = has("classes") ? get_int(entry("classes"), 1, INT64_MAX, "give 1 or more classes")
                             : spec->default_classes;

  if (!has("batch")) {
    fail(at, cli ? "no batch sizes given" : "the experiment has no batch sizes",
         cli ? "pass --batch such as --batch 1:64" : "add batch: such as batch: 1:64");
  }
  c.batch_sizes = get_batch(entry("batch"));

  if (has("phase")) c.phase = get_enum(entry("phase"), kPhases);
  if (has("precision")) c.precision = get_enum(entry("precision"), kPrecisions);
  if (has("order")) c.order = get_enum(entry("order"), kOrders);
  c.optimizer = get_optimizer(entries, overrides);
  if (has("channels_last")) c.channels_last = get_bool(entry("channels_last"));
  if (has("cudnn_benchmark")) c.cudnn_benchmark = get_bool(entry("cudnn_benchmark"));
  if (has("warmup")) {
    c.warmup_steps = static_cast<int>(get_int(entry("warmup"), 0, INT_MAX, "give 0 or more warm-up steps"));
  }
  if (has("steps")) {
    c.timed_steps =
        static_cast<int>(get_int(entry("steps"), 1, INT_MAX, "give 1 or more timed steps per batch size"));
  }
  if (has("data")) {
    c.data = get_string(entry("data"), "use synthetic");
    if (c.data != "synthetic") {
      fail(entry("data").where, entry("data").where.label + " " + shown(c.data) + " is not available yet",
           "only synthetic data is supported for now, so use synthetic");
    }
  }
  if (has("seed")) {
    const Entry& e = entry("seed");
    uint64_t seed = 0;
    const std::string text = e.node.IsScalar() ? e.node.Scalar() : "";
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seed);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
      fail(e.where, e.where.label + " is " + describe(e.node) + " but must be a whole number of 0 or more",
           "give a seed such as 0");
    }
    c.seed = seed;
  }
  if (has("device")) {
    const std::string fix = "use cpu, cuda, cuda:N with N a GPU index such as 0, or auto";
    c.device = get_string(entry("device"), fix);
    if (!check_device_string(c.device).empty()) {
      fail(entry("device").where, entry("device").where.label + " " + shown(c.device) + " is not recognised",
           fix);
    }
  }

  if (has("name")) {
    c.name = get_string(entry("name"), "give a name such as vgg16_train");
    const bool ok = !c.name.empty() && std::all_of(c.name.begin(), c.name.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
    });
    if (!ok) {
      fail(entry("name").where, "name " + shown(c.name) + " is not usable as a name",
           "use only letters, digits, _, - and .");
    }
  } else {
    c.name = c.model + "_" + to_string(c.phase) + "_" + to_string(c.precision);
  }
  return c;
}

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

}  // namespace

std::string to_string(Phase p) { return name_of(kPhases, p); }
std::string to_string(Precision p) { return name_of(kPrecisions, p); }
std::string to_string(OptimizerKind k) { return name_of(kOptimizers, k); }
std::string to_string(BatchOrder o) { return name_of(kOrders, o); }

std::string check_device_string(const std::string& device) {
  if (device == "cpu" || device == "cuda" || device == "auto") return "";
  const std::string prefix = "cuda:";
  if (device.size() > prefix.size() && device.compare(0, prefix.size(), prefix) == 0 &&
      std::all_of(device.begin() + prefix.size(), device.end(),
                  [](char c) { return c >= '0' && c <= '9'; }) &&
      device.size() - prefix.size() <= 4) {
    return "";
  }
  return "device " + shown(device) +
         " is not recognised; use cpu, cuda, cuda:N with N a GPU index such as 0, or auto";
}

SweepConfig parse_sweep_config(const std::string& yaml_text, const std::string& source,
                               const SweepOverrides& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    fail({source, error_line(yaml_text, e.mark.line), ""}, "the YAML is malformed (" + e.msg + ")",
         "fix the syntax on this line or the one before");
  }
  const std::string no_experiments_fix =
      "add experiments: with a list of experiments, each with at least model: and batch:";
  if (root.IsNull()) fail({source, 0, ""}, "the file has no experiments", no_experiments_fix);
  if (!root.IsMap()) {
    fail({source, line_of(root), ""}, "the top level is " + describe(root) + " but must be a map of keys",
         "start with experiments: (or one experiment's keys such as model:)");
  }
  std::vector<std::string> top_keys = kTopKeys;
  for (const std::string& key : kExperimentKeys)
    if (!std::count(top_keys.begin(), top_keys.end(), key)) top_keys.push_back(key);
  Entries top;
  collect(root, source, top_keys, "the top level", top);

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
    defaults.insert_or_assign("device", top.at("device"));
  }

  SweepConfig sweep;
  sweep.source = source;
  std::vector<int> lines;
  const auto add = [&](Entries entries, const Where& at) {
    apply_overrides(overrides, entries);
    sweep.experiments.push_back(resolve(entries, at, overrides));
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
      fail(list.where, "experiments is empty", no_experiments_fix);
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
      fail({source, line_of(root), ""}, "the file has no experiments", no_experiments_fix);
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
  sweep.experiments.push_back(resolve(entries, {kCommandLine, 0, ""}, overrides));
  return sweep;
}

nlohmann::json to_json(const ExperimentConfig& e) {
  const OptimizerConfig& o = e.optimizer;
  return {{"name", e.name},
          {"model", e.model},
          {"input", e.input_shape},
          {"classes", e.classes},
          {"batch", e.batch_sizes},
          {"phase", to_string(e.phase)},
          {"optimizer",
           {{"type", to_string(o.kind)},
            {"lr", o.lr},
            {"momentum", o.momentum},
            {"weight_decay", o.weight_decay},
            {"betas", {o.beta1, o.beta2}},
            {"eps", o.eps}}},
          {"precision", to_string(e.precision)},
          {"channels_last", e.channels_last},
          {"cudnn_benchmark", e.cudnn_benchmark},
          {"warmup", e.warmup_steps},
          {"steps", e.timed_steps},
          {"order", to_string(e.order)},
          {"data", e.data},
          {"seed", e.seed},
          {"device", e.device}};
}

ExperimentConfig experiment_from_json(const nlohmann::json& j) {
  const auto enum_at = [](const nlohmann::json& obj, const char* key, const auto& table) {
    const std::string text = obj.at(key).template get<std::string>();
    const auto value = value_of(table, text);
    if (!value)
      throw std::invalid_argument(std::string("the experiment record has an unknown ") + key + " " + text);
    return *value;
  };
  try {
    ExperimentConfig e;
    e.name = j.at("name").get<std::string>();
    e.model = j.at("model").get<std::string>();
    e.input_shape = j.at("input").get<std::vector<int64_t>>();
    e.classes = j.at("classes").get<int64_t>();
    e.batch_sizes = j.at("batch").get<std::vector<int64_t>>();
    e.phase = enum_at(j, "phase", kPhases);
    const nlohmann::json& o = j.at("optimizer");
    e.optimizer.kind = enum_at(o, "type", kOptimizers);
    e.optimizer.lr = o.at("lr").get<double>();
    e.optimizer.momentum = o.at("momentum").get<double>();
    e.optimizer.weight_decay = o.at("weight_decay").get<double>();
    const auto betas = o.at("betas").get<std::vector<double>>();
    if (betas.size() != 2)
      throw std::invalid_argument("the experiment record's optimizer betas are not two numbers");
    e.optimizer.beta1 = betas[0];
    e.optimizer.beta2 = betas[1];
    e.optimizer.eps = o.at("eps").get<double>();
    e.precision = enum_at(j, "precision", kPrecisions);
    e.channels_last = j.at("channels_last").get<bool>();
    e.cudnn_benchmark = j.at("cudnn_benchmark").get<bool>();
    e.warmup_steps = j.at("warmup").get<int>();
    e.timed_steps = j.at("steps").get<int>();
    e.order = enum_at(j, "order", kOrders);
    e.data = j.at("data").get<std::string>();
    e.seed = j.at("seed").get<uint64_t>();
    e.device = j.at("device").get<std::string>();
    return e;
  } catch (const nlohmann::json::exception& error) {
    throw std::invalid_argument(std::string("the experiment record is incomplete or malformed (") +
                                error.what() + ")");
  }
}

}  // namespace batchscope
