#include "lib/records/profile_records.h"

#include "lib/records/field_check.h"

namespace batchscope {
namespace {

using field_check::read_array;
using field_check::read_number;
using field_check::read_optional_number;
using field_check::read_text;
using field_check::read_whole;

Json layer_json(const LayerTime& l) {
  Json j = {{"layer", l.layer}, {"pass", l.pass}, {"calls", l.calls}, {"cpu_ms", l.cpu_ms}};
  if (l.device_ms) j["device_ms"] = *l.device_ms;
  return j;
}

Json kernel_json(const KernelTime& k) {
  Json j = {{"layer", k.layer},   {"pass", k.pass},         {"name", k.name},      {"kind", k.kind},
            {"count", k.count},   {"total_ms", k.total_ms}, {"mean_ms", k.mean_ms}};
  if (!k.grid.empty()) j["grid"] = k.grid;
  if (!k.block.empty()) j["block"] = k.block;
  return j;
}

Json gemm_json(const GemmLayer& g) {
  return {{"layer", g.name},   {"first", g.first}, {"rows", g.rows}, {"input_rows", g.input_rows},
          {"n", g.n},          {"k", g.k},         {"in", g.in},     {"kernel_area", g.kernel_area},
          {"groups", g.groups}};
}

GemmLayer gemm_from_json(const Json& j) {
  GemmLayer g;
  g.name = read_text(j, "layer");
  if (!j.contains("first") || !j["first"].is_boolean())
    throw BadRecord("has a gemm_layers entry whose first is not true or false");
  g.first = j["first"].get<bool>();
  g.rows = read_whole(j, "rows");
  g.input_rows = read_whole(j, "input_rows");
  g.n = read_whole(j, "n");
  g.k = read_whole(j, "k");
  g.in = read_whole(j, "in");
  g.kernel_area = read_whole(j, "kernel_area");
  g.groups = read_whole(j, "groups");
  if (g.rows < 1 || g.input_rows < 1 || g.n < 1 || g.k < 1 || g.in < 1 || g.kernel_area < 1 || g.groups < 1)
    throw BadRecord("has a gemm_layers entry with a size below 1 (" + g.name + ")");
  return g;
}

}  // namespace

Json to_json(const ProfileRecord& r) {
  Json j = key_json(record::kProfile, r.key);
  j["steps"] = r.steps;
  j["method"] = r.method;
  j["step_ms"] = r.step_ms;
  if (r.kernel_ms) j["kernel_ms"] = *r.kernel_ms;
  if (!r.trace.empty()) j["trace"] = r.trace;
  j["layers"] = Json::array();
  for (const LayerTime& l : r.layers) j["layers"].push_back(layer_json(l));
  j["kernels"] = Json::array();
  for (const KernelTime& k : r.kernels) j["kernels"].push_back(kernel_json(k));
  if (!r.gemm_layers.empty()) {
    j["gemm_layers"] = Json::array();
    for (const GemmLayer& g : r.gemm_layers) j["gemm_layers"].push_back(gemm_json(g));
  }
  return j;
}

ProfileRecord profile_record_from_json(const Json& j) {
  if (!j.is_object() || !j.contains("type") || j["type"] != record::kProfile)
    throw BadRecord("is not a profile record");
  ProfileRecord r;
  r.key = {read_text(j, "experiment"), read_text(j, "model"),  read_text(j, "phase"), read_text(j, "precision"),
           read_text(j, "device"),     j.contains("transfer") ? read_text(j, "transfer") : std::string(),
           read_whole(j, "batch_size"), std::nullopt};
  if (j.contains("pass")) r.key.pass = read_whole(j, "pass");
  if (r.key.batch_size < 1) throw BadRecord("has a batch_size below 1");
  r.steps = read_whole(j, "steps");
  if (r.steps < 1) throw BadRecord("has a steps below 1");
  r.method = read_text(j, "method");
  r.step_ms = read_number(j, "step_ms");
  r.kernel_ms = read_optional_number(j, "kernel_ms");
  if (j.contains("trace")) r.trace = read_text(j, "trace");
  for (const Json& l : read_array(j, "layers")) {
    LayerTime layer{read_text(l, "layer"), read_text(l, "pass"), read_number(l, "calls"), read_number(l, "cpu_ms"),
                    read_optional_number(l, "device_ms")};
    r.layers.push_back(std::move(layer));
  }
  for (const Json& k : read_array(j, "kernels")) {
    KernelTime kernel{read_text(k, "layer"), read_text(k, "pass"), read_text(k, "name"), read_text(k, "kind"),
                      read_number(k, "count"), read_number(k, "total_ms"), read_number(k, "mean_ms"), "", ""};
    if (k.contains("grid")) kernel.grid = read_text(k, "grid");
    if (k.contains("block")) kernel.block = read_text(k, "block");
    r.kernels.push_back(std::move(kernel));
  }
  if (j.contains("gemm_layers")) {
    for (const Json& g : read_array(j, "gemm_layers")) {
      if (!g.is_object()) throw BadRecord("has a gemm_layers entry that is not an object");
      r.gemm_layers.push_back(gemm_from_json(g));
    }
  }
  return r;
}

bool is_layout_conversion(const std::string& kernel_name) {
  return kernel_name.find("nchwToNhwc") != std::string::npos ||
         kernel_name.find("nhwcToNchw") != std::string::npos;
}

}  // namespace batchscope
