// One experiment's entries to an ExperimentConfig; lib/config/config.cpp describes the keys and their defaults.
#include "lib/config/experiment_reader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/datasets.h"
#include "lib/common/limits.h"
#include "lib/common/words.h"
#include "lib/config/batch_spec.h"
#include "lib/config/config_names.h"
#include "models/flop_tally.h"
#include "models/registry.h"
#include "models/torchscript.h"

namespace batchscope {

using yaml_fields::choose_from;
using yaml_fields::collect;
using yaml_fields::describe;
using yaml_fields::Entries;
using yaml_fields::Entry;
using yaml_fields::fail;
using yaml_fields::get_bool;
using yaml_fields::get_double;
using yaml_fields::get_int;
using yaml_fields::get_string;
using yaml_fields::inside;
using yaml_fields::join;
using yaml_fields::set_entry;
using yaml_fields::shown;
using yaml_fields::value_fix;
using yaml_fields::Where;

namespace {

const std::vector<std::string> kOptimizerKeys = {"type",  "lr",  "momentum", "weight_decay",
                                                 "betas", "eps", "foreach"};
const std::vector<std::string> kLossScaleKeys = {"type", "init_scale", "growth_factor", "backoff_factor",
                                                 "growth_interval"};
const std::vector<std::string> kBatchKeys = {"from", "to", "step", "factor"};

// A batch entry: the sizes, or a range up to the largest size that fits.
struct BatchPlan {
  std::vector<int64_t> sizes;
  std::optional<BatchToMax> to_max;
};

template <typename E>
E get_enum(const Entry& e, const NameTable<E>& table) {
  const std::string fix = "use " + join(names(table), " or ");
  const std::optional<E> value = value_of(table, get_string(e, fix));
  if (!value) {
    fail(e.where, e.where.label + " " + shown(e.node.Scalar()) + " is not recognised",
         value_fix(e.node.Scalar(), names(table), fix));
  }
  return *value;
}

BatchPlan get_batch(const Entry& e) {
  const std::string fix =
      "write batch as 1:70, 1:64:8, 1:60000:x2, 1:max, 1,8,32, [1, 8, 32] or {from: 1, to: 70, step: 1} "
      "(to: max, factor: 2 also work)";
  if (e.node.IsScalar()) {
    try {
      if (auto to_max = parse_batch_to_max(e.node.Scalar())) return {{}, to_max};
      return {parse_batch_spec(e.node.Scalar()), std::nullopt};
    } catch (const std::invalid_argument& error) {
      fail(e.where, e.where.label + " " + error.what(), "");
    }
  }
  if (e.node.IsSequence() && e.node.size() > 0) {
    std::vector<int64_t> sizes;
    for (const YAML::Node& element : e.node) {
      const Entry size{element, inside(e.where, element, "batch size")};
      sizes.push_back(get_int(size, 1, limits::kMaxBatchSize, "give batch sizes of 1 to " + std::to_string(limits::kMaxBatchSize)));
      if (std::count(sizes.begin(), sizes.end(), sizes.back()) > 1) {
        fail(size.where, "batch size " + std::to_string(sizes.back()) + " is listed twice",
             "give each size once");
      }
    }
    return {sizes, std::nullopt};
  }
  if (!e.node.IsMap()) {
    fail(e.where, e.where.label + " is " + (e.node.IsSequence() ? "an empty list" : describe(e.node)), fix);
  }
  Entries range;
  collect(e.node, e.where.source, kBatchKeys, "batch", range);
  for (const char* key : {"from", "to"}) {
    if (!range.count(key)) fail(e.where, "batch has no " + std::string(key), fix);
  }
  const std::string sizes = "give sizes of 1 to " + std::to_string(limits::kMaxBatchSize);
  const int64_t from = get_int(range.at("from"), 1, limits::kMaxBatchSize, sizes);
  const int64_t step = range.count("step") ? get_int(range.at("step"), 1, limits::kMaxBatchSize,
                                                     "give a step of 1 to " + std::to_string(limits::kMaxBatchSize))
                                           : 1;
  double factor = 0;
  if (range.count("factor")) {
    if (range.count("step"))
      fail(range.at("factor").where, "batch has both step and factor", "give one of them");
    factor = get_double(range.at("factor"), 1, false, INFINITY, "give a factor above 1, e.g. factor: 2");
  }
  const Entry& to_entry = range.at("to");
  if (to_entry.node.IsScalar() && to_entry.node.Scalar() == "max") {
    return {{}, BatchToMax{from, step, factor}};
  }
  const int64_t to = get_int(to_entry, 1, limits::kMaxBatchSize, sizes + ", or max for the largest size that fits");
  if (from > to)
    fail(e.where, "batch from " + std::to_string(from) + " to " + std::to_string(to) + " is inverted",
         "give from <= to");
  try {
    if (factor > 0) return {batch_geometric(from, to, factor), std::nullopt};
    return {batch_range(from, to, step), std::nullopt};
  } catch (const std::invalid_argument& error) {
    fail(e.where, e.where.label + " " + error.what(), "");
  }
}

std::string sequence_model_names() {
  std::vector<std::string> names;
  for (const auto& m : models::all_models()) {
    if (m.sequence_axis >= 0) names.push_back(m.name);
  }
  return join(names);
}

std::vector<int64_t> get_input(const Entry& e, const models::ModelSpec& spec) {
  std::vector<std::string> dims;
  for (int64_t d : spec.default_input) dims.push_back(std::to_string(d));
  // A TorchScript file's module takes whatever its code takes: any number of sizes.
  const std::string fix =
      spec.file ? "give the sizes of one sample the module takes, 1 to " + std::to_string(limits::kMaxDimension) +
                      " each, without the batch dimension, like [3, 224, 224]"
                : "give " + std::to_string(dims.size()) + " sizes of 1 to " + std::to_string(limits::kMaxDimension) +
                      " without the batch dimension, like " + spec.name + "'s default [" + join(dims) + "]";
  if (!e.node.IsSequence())
    fail(e.where, e.where.label + " is " + describe(e.node) + " but must be a list", fix);
  std::vector<int64_t> shape;
  for (const YAML::Node& element : e.node) {
    shape.push_back(get_int(Entry{element, inside(e.where, element, e.where.label + " size")}, 1,
                            limits::kMaxDimension, fix));
  }
  if (shape.empty() || (!spec.file && shape.size() != spec.default_input.size())) {
    fail(e.where, e.where.label + " has " + std::to_string(shape.size()) + " sizes for " + spec.name, fix);
  }
  if (spec.file && spec.file->input == models::FileInput::Tokens && shape.size() != 1) {
    fail(e.where,
         e.where.label + " has " + std::to_string(shape.size()) + " sizes, but " + spec.name +
             " takes token ids (input_kind: tokens), whose input is the sequence length alone",
         e.where.source == kCommandLine ? "give one size, like --input 128" : "give one size, like [128]");
  }
  return shape;
}

OptimizerConfig get_optimizer(const Entries& entries, const SweepOverrides& o) {
  OptimizerConfig opt;
  bool decay_given = false;
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
      decay_given = true;
      opt.weight_decay =
          get_double(keys.at("weight_decay"), 0, true, INFINITY, "give a weight_decay of 0 or more");
    }
    if (keys.count("eps")) opt.eps = get_double(keys.at("eps"), 0, false, INFINITY, "give an eps above 0");
    if (keys.count("foreach")) opt.foreach = get_enum(keys.at("foreach"), kForeachWords);
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
  if (o.foreach)
    opt.foreach = get_enum(Entry{YAML::Node(*o.foreach), {kCommandLine, 0, "--foreach"}}, kForeachWords);
  // PyTorch's AdamW decays by default, and is chosen for it.
  if (opt.kind == OptimizerKind::AdamW && !decay_given) opt.weight_decay = kAdamWWeightDecay;
  return opt;
}

// One sample's elements and the largest batch's, multiplied without overflow, within the limits.
void check_products(const ExperimentConfig& c, const Entries& entries, const Where& at) {
  const auto where_of = [&](std::initializer_list<const char*> keys) {
    for (const char* key : keys) {
      if (entries.count(key)) return entries.at(key).where;
    }
    return at;
  };
  int64_t elements = 1;
  for (const int64_t d : c.input_shape) {
    if (__builtin_mul_overflow(elements, d, &elements) || elements > limits::kMaxSampleElements) {
      fail(where_of({"input", "seq_len"}),
           "one sample of " + models::shape_text(c.input_shape) + " has more than " +
               std::to_string(limits::kMaxSampleElements) + " elements, the most accepted",
           "give a smaller input");
    }
  }
  int64_t largest = c.batch_to_max ? c.batch_to_max->from : 1;
  for (const int64_t b : c.batch_sizes) largest = std::max(largest, b);
  int64_t batch_elements = 0;
  if (__builtin_mul_overflow(largest, elements, &batch_elements) || batch_elements > limits::kMaxBatchElements) {
    fail(where_of({"batch"}),
         "batch size " + std::to_string(largest) + " of " + models::shape_text(c.input_shape) + " samples holds " +
             "more than " + std::to_string(limits::kMaxBatchElements) + " elements, the most accepted",
         "give batch sizes up to " + std::to_string(limits::kMaxBatchElements / elements));
  }
}

}  // namespace

void apply_overrides(const SweepOverrides& o, Entries& into) {
  const auto put = [&](const char* key, const char* flag, const YAML::Node& value) {
    set_entry(into, key, Entry{value, Where{kCommandLine, 0, flag}});
  };
  if (o.model) put("model", "--model", YAML::Node(*o.model));
  if (o.device) put("device", "--device", YAML::Node(*o.device));
  if (o.batch) put("batch", "--batch", YAML::Node(*o.batch));
  if (o.phase) put("phase", "--phase", YAML::Node(*o.phase));
  if (o.precision) put("precision", "--precision", YAML::Node(*o.precision));
  if (o.order) put("order", "--order", YAML::Node(*o.order));
  if (o.data) put("data", "--data", YAML::Node(*o.data));
  if (o.transfer) put("transfer", "--transfer", YAML::Node(*o.transfer));
  if (o.chunk) put("chunk", "--chunk", YAML::Node(*o.chunk));
  if (o.chunk_auto) put("chunk", "--chunk", YAML::Node("auto"));
  if (o.input_shape) put("input", "--input", YAML::Node(*o.input_shape));
  if (o.seq_len) put("seq_len", "--seq-len", YAML::Node(*o.seq_len));
  if (o.input_kind) put("input_kind", "--input-kind", YAML::Node(*o.input_kind));
  if (o.vocab) put("vocab", "--vocab", YAML::Node(*o.vocab));
  if (o.classes) put("classes", "--classes", YAML::Node(*o.classes));
  if (o.warmup_steps) put("warmup", "--warmup", YAML::Node(*o.warmup_steps));
  if (o.timed_steps) put("steps", "--steps", YAML::Node(*o.timed_steps));
  if (o.steps_auto) put("steps", "--steps", YAML::Node("auto"));
  if (o.ci_width) put("ci_width", "--ci-width", YAML::Node(*o.ci_width));
  if (o.min_time) put("min_time", "--min-time", YAML::Node(*o.min_time));
  if (o.max_time) put("max_time", "--max-time", YAML::Node(*o.max_time));
  // A setting of steps: auto asks for it, whatever count the file has.
  if (!o.timed_steps && !o.steps_auto) {
    if (o.min_time) put("steps", "--min-time", YAML::Node("auto"));
    else if (o.ci_width) put("steps", "--ci-width", YAML::Node("auto"));
    else if (o.max_time) put("steps", "--max-time", YAML::Node("auto"));
  }
  if (o.seed) put("seed", "--seed", YAML::Node(*o.seed));
  if (o.channels_last) put("channels_last", "--channels-last", YAML::Node(*o.channels_last));
  if (o.cudnn_benchmark) put("cudnn_benchmark", "--cudnn-benchmark", YAML::Node(*o.cudnn_benchmark));
  if (o.tf32) put("tf32", "--tf32", YAML::Node(*o.tf32));
  if (o.profile) put("profile", "--profile", YAML::Node(*o.profile));
  if (o.profile_steps) put("profile_steps", "--profile-steps", YAML::Node(*o.profile_steps));
  if (o.repeats) put("repeats", "--repeats", YAML::Node(*o.repeats));
}

namespace {

// The entries of one experiment, looked up by key.
struct Keys {
  const Entries& entries;
  bool has(const char* key) const { return entries.count(key) > 0; }
  const Entry& operator[](const char* key) const { return entries.at(key); }
};

// model: required, and one of the zoo's.
const models::ModelSpec& read_model(const Keys& k, const Where& at, bool cli, ExperimentConfig& c) {
  if (!k.has("model")) {
    fail(at, cli ? "no model given" : "the experiment has no model",
         std::string(cli ? "pass --model NAME" : "add model: NAME") + " with one of " +
             models::known_model_names());
  }
  c.model = get_string(k["model"], "give a model name");
  if (models::is_model_file_name(c.model)) {
    const models::FileInput input =
        k.has("input_kind") ? get_enum(k["input_kind"], kFileInputs) : models::FileInput::Float;
    int64_t vocab = 0;
    if (k.has("vocab")) {
      const Entry& e = k["vocab"];
      vocab = get_int(e, 1, limits::kMaxClasses,
                      "give the number of token ids, 1 to " + std::to_string(limits::kMaxClasses));
      if (input != models::FileInput::Tokens) {
        fail(e.where,
             e.where.label + " applies to token ids, and " + c.model + " is read as a module of float values",
             e.where.source == kCommandLine ? "pass --input-kind tokens, or remove it"
                                            : "add input_kind: tokens, or remove it");
      }
    }
    try {
      return models::torchscript_model(c.model, input, vocab);
    } catch (const std::invalid_argument& error) {
      fail(k["model"].where, k["model"].where.label + " " + error.what(), "");
    }
  }
  const models::ModelSpec* spec = models::find_model(c.model);
  if (!spec) {
    fail(k["model"].where, k["model"].where.label + " " + shown(c.model) + " is not a known model",
         models::unknown_model_fix(c.model));
  }
  for (const char* key : {"input_kind", "vocab"}) {
    if (!k.has(key)) continue;
    fail(k[key].where,
         k[key].where.label + " applies to TorchScript files only, and " + c.model + " is a model of the zoo",
         std::string("remove it") +
             (std::string(key) == "vocab" ? " (classes is a zoo language model's vocabulary)" : ""));
  }
  return *spec;
}

// A TorchScript file has no default input: neither input nor a dataset's images were given.
[[noreturn]] void fail_no_input(const Keys& k, const models::ModelSpec& spec) {
  const Where& at = k["model"].where;
  const bool cli = at.source == kCommandLine;
  if (spec.input_kind == models::InputKind::Tokens) {
    fail(at, spec.name + " is a TorchScript file of token ids, whose sequence length batchscope cannot know",
         cli ? "pass --seq-len, like --seq-len 128" : "add seq_len:, like seq_len: 128");
  }
  fail(at, spec.name + " is a TorchScript file, whose input shape batchscope cannot know",
       cli ? "pass --input with one sample's sizes, like --input 3,224,224"
           : "add input: with one sample's sizes, like input: [3, 224, 224]");
}

// A TorchScript file's model: the input is required (a dataset's images may give it), and the classes
// are what its output gives for one sample, which a given classes must match.
void read_file_model_shape(const Keys& k, const models::ModelSpec& spec, ExperimentConfig& c) {
  c.model_file = spec.file;
  if (!k.has("input") && !k.has("seq_len")) {
    if (k.has("data")) return;  // read_data gives the images' shape
    fail_no_input(k, spec);
  }
  const Entry& input = k.has("seq_len") ? k["seq_len"] : k["input"];
  int64_t classes = 0;
  try {
    classes = spec.classes_of(c.input_shape);
  } catch (const models::VocabError& error) {
    const Entry& vocab = k.has("vocab") ? k["vocab"] : k["model"];
    fail(vocab.where, vocab.where.label + ": " + error.what(), "");
  } catch (const std::invalid_argument& error) {
    fail(input.where, input.where.label + ": " + error.what(), "");
  }
  if (!k.has("classes")) {
    c.classes = classes;
  } else if (c.classes != classes) {
    fail(k["classes"].where,
         k["classes"].where.label + " is " + std::to_string(c.classes) + " but " + spec.name + " returns " +
             std::to_string(classes) + " for a " + models::shape_text(c.input_shape) + " sample",
         "leave classes out, or give " + std::to_string(classes));
  }
}

// input, seq_len and classes, each defaulting to the model's own.
void read_shape(const Keys& k, const models::ModelSpec& spec, ExperimentConfig& c) {
  c.input_shape = k.has("input") ? get_input(k["input"], spec) : spec.default_input;
  if (k.has("seq_len")) {
    const Entry& e = k["seq_len"];
    if (spec.sequence_axis < 0) {
      fail(e.where, spec.name + " takes no sequences, so " + e.where.label + " does not apply",
           spec.file ? (e.where.source == kCommandLine ? "remove it, or pass --input-kind tokens"
                                                       : "remove it, or add input_kind: tokens") +
                           std::string(" for a module that takes token ids")
                     : "remove it, or use a sequence model: " + sequence_model_names());
    }
    const auto axis = static_cast<std::size_t>(spec.sequence_axis);
    // A TorchScript file of token ids has no default input: the sequence length alone is its input.
    if (c.input_shape.size() <= axis) c.input_shape.assign(axis + 1, 1);
    const int64_t example = axis < spec.default_input.size() ? spec.default_input[axis] : 128;
    const int64_t length = get_int(e, 1, limits::kMaxDimension,
                                   "give a sequence length of 1 to " + std::to_string(limits::kMaxDimension) +
                                       ", e.g. " + std::to_string(example));
    // Both given: one of them would silently not count.
    if (k.has("input") && c.input_shape[axis] != length) {
      fail(e.where,
           e.where.label + " " + std::to_string(length) + " and " + k["input"].where.label + " [" +
               joined_numbers(c.input_shape, ", ") + "] give other sequence lengths",
           "give one of them");
    }
    c.input_shape[axis] = length;
  }
  c.classes = k.has("classes") ? get_int(k["classes"], 1, limits::kMaxClasses,
                                         "give 1 to " + std::to_string(limits::kMaxClasses) + " classes")
                               : spec.default_classes;
  if (spec.file) read_file_model_shape(k, spec, c);
}

// data: synthetic, or a dataset (by name or directory), which then fixes input and classes.
void read_data(const Keys& k, const models::ModelSpec& spec, ExperimentConfig& c) {
  const Entry& e = k["data"];
  const std::string kinds = "use synthetic, " + data::dataset_names() + ", or a directory of one's files";
  c.data = get_string(e, kinds);
  if (c.data.empty()) fail(e.where, e.where.label + " is empty", kinds);
  std::error_code ec;
  if (c.data != "synthetic" && !data::is_dataset_name(c.data) && !std::filesystem::is_directory(c.data, ec)) {
    // Generated inputs as other tools name them, or synthetic mistyped; else the nearest dataset.
    const std::map<std::string, std::string> generated = {
        {"random", "synthetic"}, {"fake", "synthetic"}, {"dummy", "synthetic"}, {"generated", "synthetic"}};
    const bool meant_synthetic = !meant_word(c.data, {"synthetic"}, generated).empty();
    const std::string nearest = meant_synthetic ? "synthetic" : data::nearest_dataset_name(c.data);
    fail(e.where,
         e.where.label + " " + shown(c.data) + " is not synthetic, a dataset (" + data::dataset_names() +
             ") or a directory of one's files",
         nearest.empty() ? "use one of those (scripts/get_datasets.sh fetches them)"
         : meant_synthetic
             ? "did you mean synthetic? it times steps on generated inputs, no files needed"
             : "did you mean " + nearest + "? scripts/get_datasets.sh " + nearest + " fetches it");
  }
  if (c.data == "synthetic") return;
  if (spec.input_kind != models::InputKind::Image) {
    fail(e.where,
         spec.name + " takes " + models::input_kind_name(spec.input_kind) + ", not the images of " + shown(c.data),
         "use data: synthetic for " + spec.name);
  }
  const data::DatasetKind& dataset = data::kind_of_data(c.data);
  if (k.has("input") && c.input_shape != dataset.image) {
    std::string listed;
    for (const int64_t size : dataset.image) listed += (listed.empty() ? "" : ", ") + std::to_string(size);
    fail(k["input"].where,
         k["input"].where.label + " is not " + models::shape_text(dataset.image) + ", the shape of " +
             dataset.title + " images",
         "leave input out (or give [" + listed + "]) for data: " + c.data);
  }
  if (k.has("classes") && c.classes != dataset.classes) {
    const std::string classes = std::to_string(dataset.classes);
    fail(k["classes"].where,
         k["classes"].where.label + " is not " + classes + ", the classes of " + dataset.title,
         "leave classes out (or give " + classes + ") for data: " + c.data);
  }
  c.input_shape = dataset.image;
  c.classes = dataset.classes;
}

// steps: a count, or auto with its ci_width (percent, "1%" or 1), min_time and max_time (seconds).
void read_steps(const Keys& k, ExperimentConfig& c) {
  const Entry& steps = k["steps"];
  if (!(steps.node.IsScalar() && steps.node.Scalar() == "auto")) {
    c.timed_steps = static_cast<int>(get_int(steps, 1, limits::kMaxSteps,
                                             "give 1 to " + std::to_string(limits::kMaxSteps) +
                                                 " timed steps per batch size, or auto"));
    return;
  }
  AutoSteps a;
  c.timed_steps = limits::kAutoFirstSteps;
  if (k.has("ci_width")) {
    const Entry& e = k["ci_width"];
    std::string text = e.node.IsScalar() ? e.node.Scalar() : "";
    if (!text.empty() && text.back() == '%') text.pop_back();
    a.ci_width = get_double(Entry{YAML::Node(text), e.where}, 0, false, 50.0000001,
                            "give the half-width of the median's interval in percent, above 0 and up to 50, "
                            "e.g. 1%") / 100;
  }
  if (k.has("min_time"))
    a.min_time_s = get_double(k["min_time"], 0, true, limits::kMaxAutoTimeS, "give seconds from 0, less than a day, e.g. 2");
  if (k.has("max_time"))
    a.max_time_s = get_double(k["max_time"], 0, false, limits::kMaxAutoTimeS, "give seconds above 0, less than a day, e.g. 10");
  if (a.min_time_s > a.max_time_s) {
    const Entry& e = k.has("min_time") ? k["min_time"] : steps;
    const auto seconds = [](double s) {
      std::ostringstream out;
      out << s << " s";
      return out.str();
    };
    const std::string max_label = k.has("max_time") ? k["max_time"].where.label : "max_time";
    fail(e.where, e.where.label + " " + seconds(a.min_time_s) + " is longer than " + max_label + " " + seconds(a.max_time_s),
         "give a min_time no longer than max_time, or raise max_time");
  }
  c.auto_steps = a;
}

uint64_t get_seed(const Entry& e) {
  uint64_t seed = 0;
  const std::string text = e.node.IsScalar() ? e.node.Scalar() : "";
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seed);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    fail(e.where, e.where.label + " is " + describe(e.node) + " but must be a whole number of 0 or more",
         "give a seed such as 0");
  }
  return seed;
}

std::string get_device(const Entry& e) {
  const std::string device = get_string(e, device_fix(""));
  if (!check_device_string(device).empty())
    fail(e.where, e.where.label + " " + shown(device) + " is not recognised", device_fix(device));
  return device;
}

std::string get_name(const Entry& e) {
  const std::string name = get_string(e, "give a name such as vgg16_train");
  const bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
  });
  if (!ok) fail(e.where, "name " + shown(name) + " is not usable as a name", "use only letters, digits, _, - and .");
  // It names files (a trace's "NAME-batchN.json", a search's "NAME.jsonl"), which a filesystem keeps to
  // 255 bytes.
  if (name.size() > static_cast<std::size_t>(limits::kMaxNameLength)) {
    fail(e.where, "name is " + std::to_string(name.size()) + " characters long",
         "give at most " + std::to_string(limits::kMaxNameLength));
  }
  return name;
}

// loss_scale: auto (or absent) scales the loss of fp16 training, as PyTorch's GradScaler is used with it.
// As a map it also gives the scaler's settings, GradScaler's arguments under their names. --loss-scale
// replaces the map's type and keeps its settings; --loss-scale-init and --loss-scale-growth-interval
// replace two of them.
void read_loss_scale(const Keys& k, const SweepOverrides& o, ExperimentConfig& c) {
  const bool train = c.phase == Phase::Train;
  std::optional<Entry> type;
  Entries settings;
  if (k.has("loss_scale")) {
    const Entry& e = k["loss_scale"];
    if (e.node.IsMap()) {
      collect(e.node, e.where.source, kLossScaleKeys, "loss_scale", settings);
      if (settings.count("type")) type.emplace(settings.at("type"));
      settings.erase("type");
    } else {
      type.emplace(e);
    }
  }
  // emplace, not assignment, which would write the flag's value into the file's node (see set_entry).
  if (o.loss_scale) type.emplace(Entry{YAML::Node(*o.loss_scale), {kCommandLine, 0, "--loss-scale"}});
  if (o.loss_scale_init) {
    set_entry(settings, "init_scale",
              Entry{YAML::Node(*o.loss_scale_init), {kCommandLine, 0, "--loss-scale-init"}});
  }
  if (o.loss_scale_growth_interval) {
    set_entry(
        settings, "growth_interval",
        Entry{YAML::Node(*o.loss_scale_growth_interval), {kCommandLine, 0, "--loss-scale-growth-interval"}});
  }
  std::optional<LossScale> chosen;
  if (type) chosen = get_enum(*type, kLossScaleWords);
  if (chosen == LossScale::Dynamic && !train) {
    fail(type->where, type->where.label + " applies to phase: train only", "remove it, or use phase: train");
  }
  c.loss_scale = chosen.value_or(auto_loss_scale(c.phase, c.precision));

  // A setting given together with an explicit off (in the same map, or both on the command line) asks for
  // a scaler that will not run. Beside auto, or where the command line turned a file's scaler off, the
  // settings serve other experiments and are ignored.
  for (const auto& [key, entry] : settings) {
    const bool same_place =
        (entry.where.source == kCommandLine) == (type && type->where.source == kCommandLine);
    if (chosen == LossScale::Off && same_place) {
      fail(entry.where,
           entry.where.label + " applies to dynamic loss scaling, which " + type->where.label +
               " off turns off",
           "remove it, or scale the loss with dynamic");
    }
  }
  LossScalerSettings& s = c.loss_scaler;
  constexpr double kMostScale = std::numeric_limits<float>::max();  // the scale is a float32
  if (settings.count("init_scale")) {
    s.init_scale = get_double(settings.at("init_scale"), 0, false, kMostScale,
                              "give a first scale above 0, such as 65536 (GradScaler's) or 1024");
  }
  if (settings.count("growth_factor")) {
    s.growth_factor = get_double(settings.at("growth_factor"), 1, false, kMostScale,
                                 "give a growth factor above 1, such as 2");
  }
  if (settings.count("backoff_factor")) {
    s.backoff_factor = get_double(settings.at("backoff_factor"), 0, false, 1,
                                  "give a backoff factor above 0 and below 1, such as 0.5");
  }
  if (settings.count("growth_interval")) {
    // The scaler counts clean steps in an int32, as GradScaler does.
    s.growth_interval =
        get_int(settings.at("growth_interval"), 1, std::numeric_limits<int32_t>::max(),
                "give a growth interval of 1 to " + std::to_string(std::numeric_limits<int32_t>::max()) +
                    " steps, such as 2000");
  }
}

}  // namespace

ExperimentConfig read_experiment(const Entries& entries, const Where& at, const SweepOverrides& overrides) {
  const bool cli = at.source == kCommandLine;
  const Keys k{entries};
  ExperimentConfig c;
  const models::ModelSpec& spec = read_model(k, at, cli, c);
  read_shape(k, spec, c);

  if (!k.has("batch")) {
    fail(at, cli ? "no batch sizes given" : "the experiment has no batch sizes",
         cli ? "pass --batch such as --batch 1:64" : "add batch: such as batch: 1:64");
  }
  BatchPlan batch = get_batch(k["batch"]);
  c.batch_sizes = std::move(batch.sizes);
  c.batch_to_max = batch.to_max;
  check_products(c, entries, at);

  if (k.has("phase")) c.phase = get_enum(k["phase"], kPhases);
  if (k.has("precision")) c.precision = get_enum(k["precision"], kPrecisions);
  if (k.has("order")) c.order = get_enum(k["order"], kOrders);
  c.optimizer = get_optimizer(entries, overrides);
  if (k.has("channels_last")) c.channels_last = get_bool(k["channels_last"]);
  if (k.has("cudnn_benchmark")) c.cudnn_benchmark = get_bool(k["cudnn_benchmark"]);
  if (k.has("warmup")) {
    c.warmup_steps = static_cast<int>(get_int(k["warmup"], 0, limits::kMaxSteps,
                                              "give 0 to " + std::to_string(limits::kMaxSteps) + " warm-up steps"));
  }
  if (k.has("steps")) read_steps(k, c);
  for (const char* key : {"ci_width", "min_time", "max_time"}) {
    if (k.has(key) && !c.auto_steps)
      fail(k[key].where, k[key].where.label + " applies to steps: auto only", "remove it, or set steps: auto");
  }
  if (k.has("data")) read_data(k, spec, c);
  if (c.input_shape.empty()) fail_no_input(k, spec);  // data: synthetic
  if (k.has("transfer")) c.transfer = get_enum(k["transfer"], kTransfers);
  if (k.has("tf32")) c.tf32 = get_enum(k["tf32"], kTf32Modes);
  read_loss_scale(k, overrides, c);
  if (k.has("chunk") && k["chunk"].node.IsScalar() && k["chunk"].node.Scalar() == "auto") {
    c.chunk_auto = true;
    // batch: ...:max holds the sizes that fit whole, and chunk: auto changes only those that do not.
    if (c.batch_to_max) {
      fail(k["chunk"].where,
           k["chunk"].where.label +
               " auto runs the batch sizes that do not fit whole in micro-batches, and " +
               "batch: ...:max holds only sizes that fit",
           "give the batch sizes to go up to, e.g. 1:4096:x2, or leave out chunk: auto");
    }
  } else if (k.has("chunk")) {
    c.chunk = get_int(k["chunk"], 1, limits::kMaxBatchSize,
                      "give a chunk of 1 to " + std::to_string(limits::kMaxBatchSize) +
                          " samples, or auto for micro-batches only where a batch does not fit whole");
    // In slices (micro-batches) of chunk samples every batch takes the memory of one slice: the search
    // for the largest that fits would only reach its upper bound.
    if (c.batch_to_max) {
      fail(k["chunk"].where,
           k["chunk"].where.label + " runs every batch in slices of " + std::to_string(c.chunk) +
               " samples, so no batch size is the largest that fits (batch: ...:max)",
           "give the batch sizes to go up to, e.g. 1:4096:x2, or leave the chunk out");
    }
  }
  if (k.has("seed")) c.seed = get_seed(k["seed"]);
  if (k.has("device")) c.device = get_device(k["device"]);
  if (k.has("profile")) c.profile = get_bool(k["profile"]);
  if (k.has("repeats")) {
    c.repeats = static_cast<int>(get_int(k["repeats"], 1, limits::kMaxRepeats,
                                         "give 1 to " + std::to_string(limits::kMaxRepeats) + " passes"));
  }
  if (k.has("profile_steps")) {
    c.profile_steps = static_cast<int>(get_int(k["profile_steps"], 1, limits::kMaxProfileSteps,
                                               "give 1 to " + std::to_string(limits::kMaxProfileSteps) +
                                                   " profiled steps per batch size"));
  }
  c.name = k.has("name") ? get_name(k["name"])
                         : models::model_stem(c.model) + "_" + to_string(c.phase) + "_" + to_string(c.precision);

  for (const auto& [key, value] : entries) c.origins[key] = {value.where.source, value.where.line, value.where.label};
  // --loss-scale is read beside the file's loss_scale map, not in place of it.
  if (overrides.loss_scale) c.origins["loss_scale"] = {kCommandLine, 0, "--loss-scale"};
  c.origins["experiment"] = {at.source, at.line, "experiment " + c.name};
  return c;
}

}  // namespace batchscope
