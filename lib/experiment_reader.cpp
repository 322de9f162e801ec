// One experiment's entries to an ExperimentConfig; lib/config.cpp describes the keys and their defaults.
#include "lib/experiment_reader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lib/batch_spec.h"
#include "lib/config_names.h"
#include "lib/limits.h"
#include "models/flop_tally.h"
#include "models/registry.h"

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
using yaml_fields::shown;
using yaml_fields::Where;

namespace {

const std::vector<std::string> kOptimizerKeys = {"type", "lr", "momentum", "weight_decay", "betas", "eps"};
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
  if (!value) fail(e.where, e.where.label + " " + shown(e.node.Scalar()) + " is not recognised", fix);
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
  const std::string fix = "give " + std::to_string(dims.size()) + " sizes of 1 to " +
                          std::to_string(limits::kMaxDimension) + " without the batch dimension, like " +
                          spec.name + "'s default [" + join(dims) + "]";
  if (!e.node.IsSequence())
    fail(e.where, e.where.label + " is " + describe(e.node) + " but must be a list", fix);
  std::vector<int64_t> shape;
  for (const YAML::Node& element : e.node) {
    shape.push_back(get_int(Entry{element, inside(e.where, element, e.where.label + " size")}, 1,
                            limits::kMaxDimension, fix));
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
    into.insert_or_assign(key, Entry{value, Where{kCommandLine, 0, flag}});
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
  if (o.input_shape) put("input", "--input", YAML::Node(*o.input_shape));
  if (o.seq_len) put("seq_len", "--seq-len", YAML::Node(*o.seq_len));
  if (o.classes) put("classes", "--classes", YAML::Node(*o.classes));
  if (o.warmup_steps) put("warmup", "--warmup", YAML::Node(*o.warmup_steps));
  if (o.timed_steps) put("steps", "--steps", YAML::Node(*o.timed_steps));
  if (o.seed) put("seed", "--seed", YAML::Node(*o.seed));
  if (o.channels_last) put("channels_last", "--channels-last", YAML::Node(*o.channels_last));
  if (o.cudnn_benchmark) put("cudnn_benchmark", "--cudnn-benchmark", YAML::Node(*o.cudnn_benchmark));
}

ExperimentConfig read_experiment(const Entries& entries, const Where& at, const SweepOverrides& overrides) {
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
  if (has("seq_len")) {
    const Entry& e = entry("seq_len");
    if (spec->sequence_axis < 0) {
      fail(e.where, spec->name + " takes no sequences, so " + e.where.label + " does not apply",
           "remove it, or use a sequence model: " + sequence_model_names());
    }
    c.input_shape[static_cast<std::size_t>(spec->sequence_axis)] =
        get_int(e, 1, limits::kMaxDimension,
                "give a sequence length of 1 to " + std::to_string(limits::kMaxDimension) + ", e.g. " +
                    std::to_string(spec->default_input[static_cast<std::size_t>(spec->sequence_axis)]));
  }
  c.classes = has("classes") ? get_int(entry("classes"), 1, limits::kMaxClasses,
                                       "give 1 to " + std::to_string(limits::kMaxClasses) + " classes")
                             : spec->default_classes;

  if (!has("batch")) {
    fail(at, cli ? "no batch sizes given" : "the experiment has no batch sizes",
         cli ? "pass --batch such as --batch 1:64" : "add batch: such as batch: 1:64");
  }
  BatchPlan batch = get_batch(entry("batch"));
  c.batch_sizes = std::move(batch.sizes);
  c.batch_to_max = batch.to_max;
  check_products(c, entries, at);

  if (has("phase")) c.phase = get_enum(entry("phase"), kPhases);
  if (has("precision")) c.precision = get_enum(entry("precision"), kPrecisions);
  if (has("order")) c.order = get_enum(entry("order"), kOrders);
  c.optimizer = get_optimizer(entries, overrides);
  if (has("channels_last")) c.channels_last = get_bool(entry("channels_last"));
  if (has("cudnn_benchmark")) c.cudnn_benchmark = get_bool(entry("cudnn_benchmark"));
  if (has("warmup")) {
    c.warmup_steps = static_cast<int>(get_int(entry("warmup"), 0, limits::kMaxSteps,
                                              "give 0 to " + std::to_string(limits::kMaxSteps) + " warm-up steps"));
  }
  if (has("steps")) {
    c.timed_steps =
        static_cast<int>(get_int(entry("steps"), 1, limits::kMaxSteps,
                                 "give 1 to " + std::to_string(limits::kMaxSteps) + " timed steps per batch size"));
  }
  if (has("data")) {
    c.data = get_string(entry("data"), "use synthetic, mnist, fashion-mnist or a directory of IDX files");
    if (c.data.empty()) {
      fail(entry("data").where, entry("data").where.label + " is empty",
           "use synthetic, mnist, fashion-mnist or a directory of IDX files");
    }
    std::error_code ec;
    if (c.data != "synthetic" && c.data != "mnist" && c.data != "fashion-mnist" &&
        !std::filesystem::is_directory(c.data, ec)) {
      fail(entry("data").where,
           entry("data").where.label + " " + shown(c.data) +
               " is neither synthetic, mnist, fashion-mnist nor a directory of IDX files",
           "use one of those (scripts/get_datasets.sh fetches mnist and fashion-mnist)");
    }
    if (c.data != "synthetic" && spec->input_kind != models::InputKind::Image) {
      fail(entry("data").where,
           spec->name + " takes " + models::input_kind_name(spec->input_kind) + ", not the images of " +
               shown(c.data),
           "use data: synthetic for " + spec->name);
    }
    if (c.data != "synthetic") {
      // The datasets are 28x28 grey images of 10 classes: the input follows from the data.
      const std::vector<int64_t> image{1, 28, 28};
      if (has("input") && c.input_shape != image) {
        fail(entry("input").where,
             entry("input").where.label + " is not 1x28x28, the shape of " + c.data + " images",
             "leave input out (or give [1, 28, 28]) for data: " + c.data);
      }
      if (has("classes") && c.classes != 10) {
        fail(entry("classes").where, entry("classes").where.label + " is not 10, the classes of " + c.data,
             "leave classes out (or give 10) for data: " + c.data);
      }
      c.input_shape = image;
      c.classes = 10;
    }
  }
  if (has("transfer")) c.transfer = get_enum(entry("transfer"), kTransfers);
  if (has("chunk")) {
    c.chunk = get_int(entry("chunk"), 1, limits::kMaxBatchSize,
                      "give a chunk of 1 to " + std::to_string(limits::kMaxBatchSize) + " samples");
    if (c.phase != Phase::Infer) {
      fail(entry("chunk").where, "chunk applies to phase: infer only", "remove chunk, or use phase: infer");
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
  for (const auto& [key, value] : entries) c.origins[key] = {value.where.source, value.where.line, value.where.label};
  c.origins["experiment"] = {at.source, at.line, "experiment " + c.name};
  return c;
}

}  // namespace batchscope
