#include "lib/records/microbatch_records.h"

#include <cmath>

#include "lib/records/field_check.h"

namespace batchscope {
namespace {

using field_check::read_number;
using field_check::read_object;
using field_check::read_optional_number;
using field_check::read_sizes;
using field_check::read_text;
using field_check::read_whole;

Json steps_json(const MicroBatchSteps& s) {
  Json j = {{"median_ms", s.median_ms},
            {"p10_ms", s.p10_ms},
            {"p90_ms", s.p90_ms},
            {"steps", s.steps},
            {"peak_memory_bytes", optional_json(s.peak_memory_bytes)}};
  if (s.skipped_steps) j["skipped_steps"] = *s.skipped_steps;
  return j;
}

MicroBatchSteps steps_from(const Json& j) {
  MicroBatchSteps s{read_number(j, "median_ms"),
                    read_number(j, "p10_ms"),
                    read_number(j, "p90_ms"),
                    read_whole(j, "steps"),
                    std::nullopt,
                    std::nullopt};
  if (j.contains("peak_memory_bytes") && !j["peak_memory_bytes"].is_null()) s.peak_memory_bytes = read_whole(j, "peak_memory_bytes");
  if (j.contains("skipped_steps")) s.skipped_steps = read_whole(j, "skipped_steps");
  return s;
}

}  // namespace

Json to_json(const LayerCostRecord& r) {
  return {{"type", record::kLayerCost}, {"layer", r.layer},        {"input_shape", r.input_shape},
          {"micro_batch", r.micro_batch}, {"median_ms", r.median_ms}, {"p10_ms", r.p10_ms},
          {"p90_ms", r.p90_ms}};
}

std::string skipped_steps_note(const MicroBatchResultRecord& r) {
  const int64_t undivided = r.undivided.skipped_steps.value_or(0),
                planned = r.planned.skipped_steps.value_or(0);
  if (undivided == 0 && planned == 0) return "";
  return "the loss scaler skipped the optimizer step of " + std::to_string(undivided) + " undivided and " +
         std::to_string(planned) + " planned of " + std::to_string(r.undivided.steps) + " timed steps each";
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
  return {read_text(j, "policy"), read_text(j, "layer"), read_sizes(j, "split"), read_number(j, "predicted_ms"), read_number(j, "undivided_ms")};
}

MicroBatchResultRecord microbatch_result_from_json(const Json& j) {
  MicroBatchResultRecord r;
  r.policy = read_text(j, "policy");
  r.mode = read_text(j, "mode");
  r.batch = read_whole(j, "batch");
  const Json& predicted = read_object(j, "predicted");
  r.predicted_scope = read_text(predicted, "scope");
  r.predicted_undivided_ms = read_number(predicted, "undivided_ms");
  r.predicted_planned_ms = read_number(predicted, "planned_ms");
  r.predicted_speedup = read_number(predicted, "speedup");
  r.predicted_saving_ms = read_number(predicted, "saving_ms");
  const Json& measured = read_object(j, "measured");
  r.measured_scope = read_text(measured, "scope");
  r.timer = read_text(measured, "timer");
  r.undivided = steps_from(read_object(measured, "undivided"));
  r.planned = steps_from(read_object(measured, "planned"));
  r.measured_speedup = read_number(measured, "speedup");
  r.measured_saving_ms = read_number(measured, "saving_ms");
  r.gradient_difference = read_optional_number(j, "gradient_difference");
  r.conv_share_of_step = read_optional_number(j, "conv_share_of_step");
  if (j.contains("batch_norm_note")) r.batch_norm_note = read_text(j, "batch_norm_note");
  r.halves_gradient_difference = read_optional_number(j, "halves_gradient_difference");
  return r;
}

LayerCostRecord layer_cost_from_json(const Json& j) {
  const LayerCostRecord r{read_text(j, "layer"),        read_sizes(j, "input_shape"),
                          read_whole(j, "micro_batch"), read_number(j, "median_ms"),
                          read_number(j, "p10_ms"),     read_number(j, "p90_ms")};
  // A time no measurement gives, or a micro-batch of no samples: the planner would throw on it later, far
  // from the record.
  if (r.micro_batch < 1) throw BadRecord("has a micro_batch below 1");
  for (const auto& [key, ms] : {std::pair<const char*, double>{"median_ms", r.median_ms},
                                {"p10_ms", r.p10_ms},
                                {"p90_ms", r.p90_ms}}) {
    if (!std::isfinite(ms) || ms < 0)
      throw BadRecord(std::string("has a ") + key + " that is not a time (" + std::to_string(ms) + ")");
  }
  return r;
}

void check_layer_cost(const Json& j) {
  if (j.value("type", "") == record::kLayerCostSkipped) {
    read_text(j, "reason");
    return;
  }
  layer_cost_from_json(j);
}

}  // namespace batchscope
