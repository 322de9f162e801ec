#include "lib/analysis/peak_share.h"

#include <cmath>

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
        earlier.phase == entry.phase) {
      earlier = entry;
      return;
    }
  }
  table.entries.push_back(entry);
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
    if (base.device == "cpu" && r.contains("cpu") && r["cpu"].is_object())
      base.cpu = r["cpu"].value("model", "");
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
      if (entry.operation != "matmul" && entry.operation != "conv") {
        throw UserError(located(path, line,
                                "the " + entry.precision + " rate of the peak record is of the operation '" +
                                    printable(entry.operation) + "', neither matmul nor conv",
                                kFix));
      }
      if (entry.operation == "conv") {
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

std::optional<PeakEntry> convolution_roof(const PeakTable& table, const std::string& device,
                                          const std::string& cpu, const std::vector<std::string>& precisions,
                                          const std::string& phase) {
  for (const std::string& precision : precisions) {
    if (const PeakEntry* e = fastest_peak(table, device, cpu, precision, "conv", phase)) return *e;
  }
  return std::nullopt;
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
