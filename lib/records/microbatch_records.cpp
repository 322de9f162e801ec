#include "lib/records/microbatch_records.h"

#include "lib/records/field_check.h"

namespace batchscope {
namespace {

// Reading a field of a record from outside: the field must be there with the right type, else
// BadRecord names it.
[[noreturn]] void bad(const std::string& key, const char* should_be) {
  throw BadRecord("has " + field_check::with_article(key) + " that is not " + should_be);
}

const Json& field(const Json& j, const char* key) {
  static const Json missing;
  const auto found = j.find(key);
  return found == j.end() ? missing : *found;
}

std::string text(const Json& j, const char* key) {
  const Json& v = field(j, key);
  if (!v.is_string()) bad(key, "text");
  return v.get<std::string>();
}

double number(const Json& j, const char* key) {
  const Json& v = field(j, key);
  if (!field_check::is_finite_number(v)) bad(key, "a number");
  return v.get<double>();
}

std::optional<double> optional_number(const Json& j, const char* key) {
  if (!j.contains(key)) return std::nullopt;
  return number(j, key);
}

int64_t whole(const Json& j, const char* key) {
  const Json& v = field(j, key);
  if (!field_check::is_whole(v)) bad(key, "a whole number");
  return v.get<int64_t>();
}

std::vector<int64_t> sizes(const Json& j, const char* key) {
  const Json& v = field(j, key);
  if (!v.is_array()) bad(key, "a list of whole numbers");
  std::vector<int64_t> out;
  for (const Json& size : v) {
    if (!field_check::is_whole(size)) bad(key, "a list of whole numbers");
    out.push_back(size.get<int64_t>());
  }
  return out;
}

const Json& object(const Json& j, const char* key) {
  const Json& v = field(j, key);
  if (!v.is_object()) bad(key, "an object");
  return v;
}

Json steps_json(const MicroBatchSteps& s) {
  return {{"median_ms", s.median_ms},
          {"p10_ms", s.p10_ms},
          {"p90_ms", s.p90_ms},
          {"steps", s.steps},
          {"peak_memory_bytes", optional_json(s.peak_memory_bytes)}};
}

MicroBatchSteps steps_from(const Json& j) {
  MicroBatchSteps s{number(j, "median_ms"), number(j, "p10_ms"), number(j, "p90_ms"), whole(j, "steps"), std::nullopt};
  if (!field(j, "peak_memory_bytes").is_null()) s.peak_memory_bytes = whole(j, "peak_memory_bytes");
  return s;
}

}  // namespace

Json to_json(const LayerCostRecord& r) {
  return {{"type", record::kLayerCost}, {"layer", r.layer},        {"input_shape", r.input_shape},
          {"micro_batch", r.micro_batch}, {"median_ms", r.median_ms}, {"p10_ms", r.p10_ms},
          {"p90_ms", r.p90_ms}};
}

Json to_json(const LayerCostSkippedRecord& r) { return {{"type", record::kLayerCostSkipped}, {"reason", r.reason}}; }

Json to_json(const LayerPlanRecord& r) {
  return {{"type", record::kLayerPlan}, {"policy", r.policy},           {"layer", r.layer},
          {"split", r.split},           {"predicted_ms", r.predicted_ms}, {"undivided_ms", r.undivided_ms}};
}

Json to_json(const MicroBatchResultRecord& r) {
  Json j = {{"type", record::kMicroBatchResult},
            {"policy", r.policy},
            {"mode", r.mode},
            {"batch", r.batch},
            {"predicted",
             {{"scope", r.predicted_scope},
              {"undivided_ms", r.predicted_undivided_ms},
              {"planned_ms", r.predicted_planned_ms},
              {"speedup", r.predicted_speedup},
              {"saving_ms", r.predicted_saving_ms}}},
            {"measured",
             {{"scope", r.measured_scope},
              {"timer", r.timer},
              {"undivided", steps_json(r.undivided)},
              {"planned", steps_json(r.planned)},
              {"speedup", r.measured_speedup},
              {"saving_ms", r.measured_saving_ms}}},
            {"gradient_difference", r.gradient_difference ? Json(*r.gradient_difference) : Json(nullptr)}};
  if (r.conv_share_of_step) j["conv_share_of_step"] = *r.conv_share_of_step;
  if (!r.batch_norm_note.empty()) j["batch_norm_note"] = r.batch_norm_note;
  if (r.halves_gradient_difference) j["halves_gradient_difference"] = *r.halves_gradient_difference;
  return j;
}

bool is_microbatch_record_type(const std::string& type) {
  for (const char* t : {record::kLayerCost, record::kLayerCostSkipped, record::kLayerPlan, record::kMicroBatchResult}) {
    if (type == t) return true;
  }
  return false;
}

LayerPlanRecord layer_plan_from_json(const Json& j) {
  return {text(j, "policy"), text(j, "layer"), sizes(j, "split"), number(j, "predicted_ms"), number(j, "undivided_ms")};
}

MicroBatchResultRecord microbatch_result_from_json(const Json& j) {
  MicroBatchResultRecord r;
  r.policy = text(j, "policy");
  r.mode = text(j, "mode");
  r.batch = whole(j, "batch");
  const Json& predicted = object(j, "predicted");
  r.predicted_scope = text(predicted, "scope");
  r.predicted_undivided_ms = number(predicted, "undivided_ms");
  r.predicted_planned_ms = number(predicted, "planned_ms");
  r.predicted_speedup = number(predicted, "speedup");
  r.predicted_saving_ms = number(predicted, "saving_ms");
  const Json& measured = object(j, "measured");
  r.measured_scope = text(measured, "scope");
  r.timer = text(measured, "timer");
  r.undivided = steps_from(object(measured, "undivided"));
  r.planned = steps_from(object(measured, "planned"));
  r.measured_speedup = number(measured, "speedup");
  r.measured_saving_ms = number(measured, "saving_ms");
  if (!field(j, "gradient_difference").is_null()) r.gradient_difference = number(j, "gradient_difference");
  r.conv_share_of_step = optional_number(j, "conv_share_of_step");
  if (j.contains("batch_norm_note")) r.batch_norm_note = text(j, "batch_norm_note");
  r.halves_gradient_difference = optional_number(j, "halves_gradient_difference");
  return r;
}

void check_layer_cost(const Json& j) {
  if (j.value("type", "") == record::kLayerCostSkipped) {
    text(j, "reason");
    return;
  }
  text(j, "layer");
  sizes(j, "input_shape");
  whole(j, "micro_batch");
  number(j, "median_ms");
  number(j, "p10_ms");
  number(j, "p90_ms");
}

}  // namespace batchscope
