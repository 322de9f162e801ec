#include "lib/analysis/peak_share.h"

#include <cmath>
#include <set>

#include "lib/analysis/analysis.h"
#include "lib/analysis/grouping.h"
#include "lib/common/errors.h"
#include "lib/records/jsonl.h"
#include "lib/records/records.h"

namespace batchscope {
namespace {

constexpr const char* kFix = "give --peak the JSON-lines file that batchscope peak --out wrote";

// The device a peak record measured, by the name the sweeps' run records give it.
std::string device_name(const Json& record, const std::string& path, int line) {
  const Json* config =
      record.contains("config") && record["config"].is_object() ? &record["config"] : nullptr;
  if (config == nullptr || !config->contains("device") || !(*config)["device"].is_string())
    throw UserError(located(path, line, "the peak record has no config.device", kFix));
  const std::string device = (*config)["device"].get<std::string>();
  if (device.rfind("cuda", 0) != 0) return device;
  const Json* gpu = gpu_entry(device, record);
  if (gpu == nullptr || !gpu->contains("name") || !(*gpu)["name"].is_string()) {
    throw UserError(
        located(path, line, "the peak record does not name the GPU " + device + " (gpus[].name)", kFix));
  }
  return (*gpu)["name"].get<std::string>();
}

// A rate's text field, or `absent` where the rate has none.
std::string text_field(const Json& rate, const std::string& key, const std::string& absent,
                       const std::string& path, int line) {
  if (!rate.contains(key)) return absent;
  if (!rate[key].is_string())
    throw UserError(located(
        path, line, "a rate of the peak record gives its " + key + " as something other than text", kFix));
  return rate[key].get<std::string>();
}

// A later entry replaces an earlier one of the same device, operation, precision, phase and layout.
void add_entry(PeakTable& table, const PeakEntry& entry) {
  for (PeakEntry& earlier : table.entries) {
    if (earlier.device == entry.device && earlier.cpu == entry.cpu && earlier.operation == entry.operation &&
        earlier.precision == entry.precision && earlier.memory_format == entry.memory_format &&
        earlier.phase == entry.phase && earlier.model == entry.model && earlier.input == entry.input &&
        earlier.classes == entry.classes && earlier.batch == entry.batch && earlier.layer == entry.layer &&
        earlier.pass == entry.pass && earlier.cudnn_benchmark == entry.cudnn_benchmark) {
      earlier = entry;
      return;
    }
  }
  table.entries.push_back(entry);
}

// A whole number of a JSON object at `key`, at least 1; a UserError naming the record otherwise.
int64_t positive_field(const Json& object, const std::string& key, const std::string& what,
                       const std::string& path, int line) {
  if (!object.contains(key) || !object[key].is_number_integer() || object[key].get<int64_t>() < 1)
    throw UserError(located(path, line, what + " has no " + key + " of 1 or more", kFix));
  return object[key].get<int64_t>();
}

// A layer timed alone: the model and its shape from the record's config, the layer from the rate.
void read_layer(const Json& record, const Json& rate, const std::string& path, int line, PeakEntry& entry) {
  const Json& config = record["config"];
  const std::string what = "the peak record of a model's layers";
  if (!config.contains("model") || !config["model"].is_string())
    throw UserError(located(path, line, what + " names no config.model", kFix));
  entry.model = config["model"].get<std::string>();
  bool shape = config.contains("input") && config["input"].is_array() && !config["input"].empty();
  for (const Json& size : shape ? config["input"] : Json::array()) {
    shape = shape && size.is_number_integer() && size.get<int64_t>() >= 1;
  }
  if (!shape) throw UserError(located(path, line, what + " has no config.input of sizes of 1 or more", kFix));
  entry.input = config["input"].get<std::vector<int64_t>>();
  entry.classes = positive_field(config, "classes", what + "'s config", path, line);
  const std::string of = "the " + entry.precision + " rate of a layer";
  entry.layer = text_field(rate, "layer", "", path, line);
  entry.kind = text_field(rate, "kind", "", path, line);
  entry.pass = text_field(rate, "pass", "", path, line);
  if (entry.layer.empty()) throw UserError(located(path, line, of + " names no layer", kFix));
  if (entry.kind != "conv" && entry.kind != "linear")
    throw UserError(located(
        path, line, of + " is of the kind '" + printable(entry.kind) + "', neither conv nor linear", kFix));
  if (entry.pass != "forward" && entry.pass != "backward")
    throw UserError(
        located(path, line,
                of + " is of the pass '" + printable(entry.pass) + "', neither forward nor backward", kFix));
  entry.batch = positive_field(rate, "batch", of, path, line);
  if (!rate.contains("profiled")) return;
  const Json& profiled = rate["profiled"];
  const Json& tflops =
      profiled.is_object() && profiled.contains("median_tflops") ? profiled["median_tflops"] : Json();
  if (!tflops.is_number() || !std::isfinite(tflops.get<double>()) || tflops.get<double>() <= 0)
    throw UserError(located(path, line, of + " has profiled times without a median_tflops above 0", kFix));
  entry.profiled_as = text_field(profiled, "as", "", path, line);
  if (entry.profiled_as != "kernels" && entry.profiled_as != "operators")
    throw UserError(located(
        path, line,
        of + "'s profiled times are of '" + printable(entry.profiled_as) + "', neither kernels nor operators",
        kFix));
  entry.profiled_tflops = tflops.get<double>();
  if (!profiled.contains("layout_ms")) return;
  const Json& layout = profiled["layout_ms"];
  if (!layout.is_number() || !std::isfinite(layout.get<double>()) || layout.get<double>() < 0)
    throw UserError(
        located(path, line, of + " has a profiled layout_ms that is not a time of 0 or more", kFix));
  entry.profiled_layout_ms = layout.get<double>();
}

}  // namespace

PeakTable read_peak_table(const std::string& path) {
  const JsonlContents contents = read_jsonl(path);
  PeakTable table;
  table.files = {path};
  for (std::size_t i = 0; i < contents.records.size(); ++i) {
    const Json& r = contents.records[i];
    const int line = contents.record_lines[i];
    if (r["type"] != record::kPeak) {
      throw UserError(
          located(path, line, "holds a " + r["type"].dump() + " record, not a peak record", kFix));
    }
    PeakEntry base;
    base.device = device_name(r, path, line);
    if (base.device == "cpu" && r.contains("cpu") && r["cpu"].is_object()) {
      const Json& cpu = r["cpu"];
      const int64_t threads = cpu.contains("torch_threads") && cpu["torch_threads"].is_number_integer()
                                  ? cpu["torch_threads"].get<int64_t>()
                                  : 0;
      base.cpu = cpu_key(cpu.value("model", ""), threads);
    }
    base.file = path;
    base.line = line;
    if (!r.contains("rates") || !r["rates"].is_array())
      throw UserError(located(path, line, "the peak record has no rates list", kFix));
    if (r["rates"].empty())
      throw UserError(located(path, line, "the peak record's rates list is empty", kFix));
    for (const Json& rate : r["rates"]) {
      if (!rate.is_object() || !rate.contains("precision") || !rate["precision"].is_string())
        throw UserError(located(path, line, "a rate of the peak record has no precision", kFix));
      if (rate.contains("skipped")) continue;
      const Json& tflops = rate.contains("median_tflops") ? rate["median_tflops"] : Json();
      if (!tflops.is_number() || !std::isfinite(tflops.get<double>()) || tflops.get<double>() <= 0) {
        throw UserError(located(path, line,
                                "the " + rate["precision"].get<std::string>() +
                                    " rate of the peak record has no median_tflops above 0",
                                kFix));
      }
      PeakEntry entry = base;
      entry.precision = rate["precision"].get<std::string>();
      entry.median_tflops = tflops.get<double>();
      entry.operation = text_field(rate, "operation", "matmul", path, line);
      if (entry.operation != "matmul" && entry.operation != "conv" && entry.operation != "layer") {
        throw UserError(located(path, line,
                                "the " + entry.precision + " rate of the peak record is of the operation '" +
                                    printable(entry.operation) + "', not matmul, conv or layer",
                                kFix));
      }
      if (entry.operation == "layer") read_layer(r, rate, path, line, entry);
      entry.cudnn_benchmark = rate.contains("cudnn_benchmark") && rate["cudnn_benchmark"].is_boolean() &&
                              rate["cudnn_benchmark"].get<bool>();
      if (entry.operation != "matmul") {
        entry.memory_format = text_field(rate, "memory_format", "", path, line);
        entry.phase = text_field(rate, "phase", "infer", path, line);
        if (entry.phase != "train" && entry.phase != "infer") {
          throw UserError(located(path, line,
                                  "the " + entry.precision +
                                      " convolution of the peak record is of the phase '" +
                                      printable(entry.phase) + "', neither train nor infer",
                                  kFix));
        }
      }
      add_entry(table, entry);
    }
  }
  if (contents.records.empty()) throw UserError(located(path, 0, "holds no peak record", kFix));
  if (table.entries.empty()) {
    throw UserError(located(path, contents.record_lines.back(),
                            "holds no measured rate (every precision was skipped)", kFix));
  }
  return table;
}

PeakTable read_peak_tables(const std::vector<std::string>& paths) {
  PeakTable table;
  for (const std::string& path : paths) {
    const PeakTable one = read_peak_table(path);
    table.files.push_back(path);
    for (const PeakEntry& entry : one.entries) add_entry(table, entry);
  }
  return table;
}

std::string cpu_key(const std::string& model, int64_t threads) {
  return threads > 0 ? model + " \u00b7 " + std::to_string(threads) + (threads == 1 ? " thread" : " threads")
                     : model;
}

std::vector<std::string> peak_precisions_for(const std::string& precision, const std::string& tf32,
                                             bool cuda) {
  if (precision != "fp32") return {precision};
  if (!cuda || tf32 == "off") return {"fp32"};
  if (tf32 == "on") return {"tf32"};
  return {"fp32", "tf32"};
}

const PeakEntry* fastest_peak(const PeakTable& table, const std::string& device, const std::string& cpu,
                              const std::string& precision, const std::string& operation,
                              const std::string& phase) {
  const PeakEntry* best = nullptr;
  for (const PeakEntry& e : table.entries) {
    if (e.device != device || e.precision != precision || e.operation != operation ||
        (device == "cpu" && e.cpu != cpu) || (e.operation == "conv" && e.phase != phase))
      continue;
    if (best == nullptr || e.median_tflops > best->median_tflops) best = &e;
  }
  return best;
}

std::string convolution_precision(const std::string& precision, const std::string& tf32, bool cuda) {
  if (precision != "fp32" || !cuda || tf32 == "off") return precision;
  return "tf32";
}

std::optional<PeakEntry> convolution_roof(const PeakTable& table, const std::string& device,
                                          const std::string& cpu, const std::string& precision,
                                          const std::string& phase) {
  if (const PeakEntry* e = fastest_peak(table, device, cpu, precision, "conv", phase)) return *e;
  return std::nullopt;
}

std::string layer_precision(const LayerQuery& query, const std::string& kind) {
  if (query.precision != "fp32" || !query.cuda || query.tf32 == "off") return query.precision;
  if (query.tf32 == "on") return "tf32";
  return kind == "conv" ? "tf32" : "fp32";
}

namespace {

bool same_model(const PeakEntry& e, const LayerQuery& q) {
  return e.operation == "layer" && e.device == q.device && (q.device != "cpu" || e.cpu == q.cpu) &&
         e.model == q.model && e.input == q.input && e.classes == q.classes;
}

}  // namespace

const PeakEntry* layer_alone(const PeakTable& table, const LayerQuery& query, const std::string& layer,
                             const std::string& pass, bool cudnn_benchmark) {
  const std::string layout = query.channels_last ? "channels_last" : "contiguous";
  for (const PeakEntry& e : table.entries) {
    if (!same_model(e, query) || e.batch != query.batch || e.layer != layer || e.pass != pass ||
        e.phase != query.phase || e.precision != layer_precision(query, e.kind) ||
        e.cudnn_benchmark != cudnn_benchmark || (e.kind == "conv" && e.memory_format != layout))
      continue;
    return &e;
  }
  return nullptr;
}

std::vector<int64_t> layer_alone_batches(const PeakTable& table, const LayerQuery& query) {
  std::set<int64_t> batches;
  for (const PeakEntry& e : table.entries) {
    if (same_model(e, query)) batches.insert(e.batch);
  }
  return {batches.begin(), batches.end()};
}

std::optional<GroupPeak> peak_for_group(const PeakTable& table, const std::vector<PointStats>& points,
                                        const std::string& device, const std::string& cpu,
                                        const std::vector<std::string>& precisions,
                                        const std::string& phase) {
  GroupPeak peak;
  for (const PointStats& p : points) {
    if (p.too_few_samples || !p.tflops) continue;
    if (*p.tflops > peak.tflops) peak = {p.batch_size, *p.tflops, {}};
  }
  if (peak.tflops <= 0) return std::nullopt;
  for (const std::string& precision : precisions) {
    for (const char* operation : {"matmul", "conv"}) {
      const PeakEntry* best = fastest_peak(table, device, cpu, precision, operation, phase);
      if (best == nullptr) continue;
      peak.shares.push_back({best->operation, precision, best->memory_format, best->phase,
                             best->median_tflops, best->file + ":" + std::to_string(best->line),
                             peak.tflops / best->median_tflops});
    }
  }
  return peak;
}

}  // namespace batchscope
