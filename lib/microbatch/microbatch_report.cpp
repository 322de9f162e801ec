#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>

#include "lib/common/errors.h"
#include "lib/common/file_writes.h"
#include "lib/device/cpu_memory.h"
#include "lib/device/environment.h"
#include "lib/device/gpu.h"
#include "lib/microbatch/microbatch.h"
#include "lib/records/microbatch_records.h"
#include "lib/timing/step_runner.h"
#include "lib/timing/step_timer.h"
#include "models/splittable_conv.h"

namespace batchscope {
namespace {

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string join_sizes(const std::vector<int64_t>& sizes, const char* separator) {
  std::string text;
  for (int64_t s : sizes) text += (text.empty() ? "" : separator) + std::to_string(s);
  return text;
}

std::string memory_text(const std::optional<int64_t>& bytes) {
  return bytes ? format_memory_size(*bytes) : "n/a";
}

// " (init_scale 1024)": the loss scaler's settings where they are not GradScaler's.
std::string scaler_settings(const ExperimentConfig& e) {
  const std::string words = loss_scaler_words(e.loss_scaler);
  return words.empty() ? "" : " (" + words + ")";
}

// "3x224x224, fp16, loss scaled, channels-last": the sample and how its steps compute.
std::string workload_text(const ExperimentConfig& e) {
  std::string text = join_sizes(e.input_shape, "x") + ", " + to_string(e.precision);
  if (e.loss_scale == LossScale::Dynamic) text += ", loss scaled" + scaler_settings(e);
  if (e.channels_last) text += ", channels-last";
  return text;
}

}  // namespace

std::string batch_norm_note(const MicroBatchStudy& study, const PolicyOutcome& outcome) {
  const std::string difference = fixed(100.0 * outcome.gradient_difference, 4) + "% relative";
  if (!study.batch_norm) return "";
  if (study.options.mode == MicroBatchMode::Layer) {
    return "BatchNorm models: per-layer micro-batches leave BatchNorm the whole mini-batch; gradient "
           "difference " +
           difference;
  }
  if (outcome.plans.front().split.size() > 1)
    return "BatchNorm models: micro-batches change the batch statistics; gradient difference " + difference;
  std::string note =
      "BatchNorm models: this plan keeps the mini-batch whole, so the batch statistics are unchanged";
  if (study.halves_gradient_difference) {
    note += "; a split into two halves would change the gradients by " +
            fixed(100.0 * *study.halves_gradient_difference, 4) + "% relative";
  }
  return note;
}

MicroBatchResultRecord result_record(const MicroBatchStudy& study, const PolicyOutcome& outcome) {
  const bool layer = study.options.mode == MicroBatchMode::Layer;
  const auto steps = [](const MeasuredSteps& m) {
    return MicroBatchSteps{m.time_ms.median, m.time_ms.p10,       m.time_ms.p90,
                           m.time_ms.count,  m.peak_memory_bytes, m.skipped_steps};
  };
  MicroBatchResultRecord r;
  r.policy = to_string(outcome.policy);
  r.mode = to_string(study.options.mode);
  r.batch = study.options.batch;
  r.predicted_scope = layer ? "convolutions (forward+backward)" : "model forward+backward";
  r.predicted_undivided_ms = outcome.predicted_undivided_ms;
  r.predicted_planned_ms = outcome.predicted_planned_ms;
  r.predicted_speedup = outcome.predicted_speedup;
  r.predicted_saving_ms = outcome.predicted_undivided_ms - outcome.predicted_planned_ms;
  r.measured_scope = "whole train step";
  r.timer = study.timer_method;
  r.undivided = steps(outcome.undivided);
  r.planned = steps(outcome.planned);
  r.measured_speedup = outcome.measured_speedup;
  r.measured_saving_ms = r.undivided.median_ms - r.planned.median_ms;
  if (std::isfinite(outcome.gradient_difference)) r.gradient_difference = outcome.gradient_difference;
  if (layer && r.undivided.median_ms > 0) r.conv_share_of_step = outcome.predicted_undivided_ms / r.undivided.median_ms;
  r.batch_norm_note = batch_norm_note(study, outcome);
  r.halves_gradient_difference = study.halves_gradient_difference;
  return r;
}

std::vector<Json> study_records(const MicroBatchStudy& study) {
  std::vector<Json> records;
  for (const LayerCost& c : study.costs.entries) {
    records.push_back(to_json(c));
  }
  for (const std::string& s : study.costs.skipped) records.push_back(to_json(LayerCostSkippedRecord{s}));
  for (const PolicyOutcome& outcome : study.outcomes) {
    for (const SplitPlan& p : outcome.plans) {
      records.push_back(to_json(LayerPlanRecord{to_string(outcome.policy), p.name, p.split, p.predicted_ms, p.undivided_ms}));
    }
  }
  for (const PolicyOutcome& outcome : study.outcomes) records.push_back(to_json(result_record(study, outcome)));
  return records;
}

std::string study_summary(const MicroBatchStudy& study) {
  const ExperimentConfig& e = study.experiment;
  std::string text = "micro-batching " + e.model + " (" + workload_text(e) + "), batch " +
                     std::to_string(study.options.batch) + ", mode " + to_string(study.options.mode) +
                     ", on " + e.device + "\n";
  for (const PolicyOutcome& o : study.outcomes) {
    int split_layers = 0;
    for (const SplitPlan& p : o.plans) split_layers += p.split.size() > 1 ? 1 : 0;
    text +=
        "  " + to_string(o.policy) + ": " + std::to_string(split_layers) + "/" +
        std::to_string(o.plans.size()) +
        (study.options.mode == MicroBatchMode::Layer ? " convolutions" : " model") + " split; predicted " +
        fixed(o.predicted_undivided_ms, 2) + " -> " + fixed(o.predicted_planned_ms, 2) + " ms (" +
        fixed(o.predicted_speedup, 3) + "x); measured step " + fixed(o.undivided.time_ms.median, 2) + " -> " +
        fixed(o.planned.time_ms.median, 2) + " ms (" + fixed(o.measured_speedup, 3) + "x), peak " +
        memory_text(o.undivided.peak_memory_bytes) + " -> " + memory_text(o.planned.peak_memory_bytes) + "\n";
    const std::string note = batch_norm_note(study, o);
    if (!note.empty()) text += "    " + note + "\n";
    const std::string skipped = skipped_steps_note(result_record(study, o));
    if (!skipped.empty()) text += "    " + skipped + "\n";
  }
  return text;
}

std::string study_report_markdown(const MicroBatchStudy& study) {
  const ExperimentConfig& e = study.experiment;
  const bool layer = study.options.mode == MicroBatchMode::Layer;
  std::string md = "# Micro-batching " + e.model + " (" + workload_text(e) + "), batch " +
                   std::to_string(study.options.batch) + " on " + e.device + "\n\n";
  md += "Mode: " + to_string(study.options.mode) +
        (layer ? " (every convolution runs its own split; the rest of the step sees the whole batch)"
               : " (gradient accumulation over micro-batches, one optimizer step)") +
        ". Costs: median of " + std::to_string(study.options.repeats) + " timed runs after " +
        std::to_string(study.options.warmup) + " warm-up runs; steps: median of " +
        std::to_string(study.options.steps) + " (" + study.timer_method + ").";
  if (!study.options.keeping.known.empty()) {
    md += " " + std::to_string(study.options.keeping.known.size()) + " of the " +
          std::to_string(study.costs.entries.size()) +
          " costs were measured by an earlier run of this study with the same settings, stopped before its "
          "end, and taken as it wrote them.";
  }
  md += "\n\n";
  md +=
      "Train steps: " + to_string(e.optimizer.kind) +
      (e.optimizer.foreach.value_or(false) ? " with the multi-tensor (foreach) step" : "") + ", " +
      to_string(e.precision) + (e.precision == Precision::FP32 ? "" : " under autocast (the costs too)") +
      (e.loss_scale == LossScale::Dynamic ? ", loss scaled dynamically" + scaler_settings(e) : "") +
      (e.channels_last ? ", channels-last (images and convolution weights laid out NHWC, the costs too)"
                       : "") +
      ". Gradient differences are computed in fp32 with dropout off, so that only the split moves them.\n\n";
  for (const PolicyOutcome& o : study.outcomes) {
    md += "## Policy " + to_string(o.policy) +
          "\n\n| layer | split | predicted ms | undivided ms |\n|---|---|---:|---:|\n";
    for (const SplitPlan& p : o.plans) {
      md += "| " + p.name + " | " + join_sizes(p.split, "+") + " | " + fixed(p.predicted_ms, 3) + " | " +
            fixed(p.undivided_ms, 3) + " |\n";
    }
    md += "\n";
  }
  md +=
      "## Model summary\n\n| policy | predicted undivided ms | predicted planned ms | predicted speedup | "
      "measured undivided ms (p10-p90) | measured planned ms (p10-p90) | measured speedup | peak undivided | "
      "peak planned | gradient difference |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  // The best planned policy; the undivided one compares the step with itself (noise).
  const PolicyOutcome* best = nullptr;
  std::optional<double> noise;
  for (const PolicyOutcome& o : study.outcomes) {
    const Summary& u = o.undivided.time_ms;
    const Summary& p = o.planned.time_ms;
    md += "| " + to_string(o.policy) + " | " + fixed(o.predicted_undivided_ms, 2) + " | " +
          fixed(o.predicted_planned_ms, 2) + " | " + fixed(o.predicted_speedup, 3) + "x | " +
          fixed(u.median, 2) + " (" + fixed(u.p10, 2) + "-" + fixed(u.p90, 2) + ") | " + fixed(p.median, 2) +
          " (" + fixed(p.p10, 2) + "-" + fixed(p.p90, 2) + ") | " + fixed(o.measured_speedup, 3) + "x | " +
          memory_text(o.undivided.peak_memory_bytes) + " | " + memory_text(o.planned.peak_memory_bytes) +
          " | " + fixed(100.0 * o.gradient_difference, 4) + "% |\n";
    if (o.policy == MicroBatchPolicy::Undivided) {
      noise = o.measured_speedup;
    } else if (!best || o.measured_speedup > best->measured_speedup) {
      best = &o;
    }
  }
  for (const PolicyOutcome& o : study.outcomes) {
    const std::string note = batch_norm_note(study, o);
    if (!note.empty()) md += "\n" + to_string(o.policy) + ": " + note + ".";
    const std::string skipped = skipped_steps_note(result_record(study, o));
    if (!skipped.empty()) md += "\n" + to_string(o.policy) + ": " + skipped + ".";
  }
  md +=
      "\n\nUndivided and planned steps alternate one by one; the undivided policy's row compares the "
      "undivided step with itself, so its measured speedup shows how far noise alone moves the ratio.";
  md += "\n\n## Next to the paper\n\n";
  md +=
      "µ-cuDNN (Oyama et al., CLUSTER 2018) reports 1.63x on AlexNet and 1.21x on ResNet-18 on a P100, and "
      "4.54x for the best single layer on a V100. Those gains come from cuDNN convolution algorithms that "
      "need more workspace than a fixed limit allows at the whole mini-batch but fit at a smaller "
      "micro-batch. ";
  md += std::string(kWorkspaceLimitNote) + " ";
  if (torch::Device(e.device).is_cpu()) {
    md +=
        "This run is on the CPU, where there is no cuDNN and no workspace limit: a convolution's time grows "
        "about linearly with its batch, so a split can only save where small batches happen to run faster "
        "per sample, and otherwise adds per-call overhead. ";
  } else {
    const std::optional<std::string> cap = cudnn_workspace_cap_env();
    md += std::string("This run is on a GPU with cudnn_benchmark ") + (e.cudnn_benchmark ? "on" : "off") +
          (cap ? " and cuDNN's workspace capped at " + *cap +
                     " MiB (CUDNN_CONV_WSCAP_DBG): as under mu-cuDNN's limit, an algorithm that needs more "
                     "workspace at the whole batch than the cap allows may fit at a micro-batch. "
               : "; without a workspace limit the planner can only exploit algorithm choices that differ by "
                 "micro-batch size. ");
  }
  if (best == nullptr) {
    md += "Only the undivided policy ran here, so no split was measured.\n";
  } else {
    md += "Here the best measured whole-step speedup of a split is " + fixed(best->measured_speedup, 3) +
          "x (" + to_string(best->policy) + ")" +
          (noise ? ", against " + fixed(*noise, 3) + "x for the undivided step set against itself (noise)"
                 : "") +
          "; a value at or below 1x, or within the noise of 1x, means micro-batching did not help on this "
          "device and library, whatever the per-layer prediction says.\n";
  }
  return md;
}

void write_microbatch_files(const std::string& dir, const Json& run_record, const MicroBatchStudy& study) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  // Replaced whole: until the whole study is on disk, a stopped study's costs stay.
  std::string lines = jsonl_line(run_record);
  for (const Json& r : study_records(study)) lines += jsonl_line(r);
  lines += jsonl_line(Json{{"type", record::kEnd}, {"time", iso8601_utc_now()}});
  replace_file((fs::path(dir) / "microbatch.jsonl").string(), lines);
  std::ofstream report(fs::path(dir) / "report.md");
  report << study_report_markdown(study);
  if (!report)
    throw UserError(
        located((fs::path(dir) / "report.md").string(), 0, "cannot be written", "check the directory"));
}

bool has_complete_microbatch_result(const std::string& dir) {
  const std::filesystem::path jsonl = std::filesystem::path(dir) / "microbatch.jsonl";
  if (!std::filesystem::exists(jsonl)) return false;
  const JsonlContents contents = read_jsonl(jsonl.string(), BadLines::Collect);
  for (const Json& r : contents.records) {
    if (r.value("type", "") == record::kEnd) return true;
  }
  return false;
}

}  // namespace batchscope
