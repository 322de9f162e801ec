#include "lib/analysis/report/analysis_json.h"

#include "lib/analysis/report/memory_report.h"

namespace batchscope {
namespace {

template <typename Record>
Json records_json(const std::vector<Record>& records) {
  Json out = Json::array();
  for (const Record& r : records) out.push_back(to_json(r));
  return out;
}

Json jump_json(const Jump& j) {
  Json out{{"from", j.from_batch},
              {"to", j.to_batch},
              {"from_ms", j.from_ms},
              {"to_ms", j.to_ms},
              {"delta_ms", j.delta_ms},
              {"delta_pct", j.delta_pct},
              {"z", j.z},
              {"confidence", j.confidence}};
  // Only with repeated passes, so that analyses of single-pass logs keep their keys.
  if (j.passes > 0) {
    out["passes"] = j.passes;
    out["passes_with"] = j.passes_with;
  }
  return out;
}

Json choice_json(const BatchChoice& c) {
  return Json{{"batch_size", c.batch_size}, {"median_ms", c.median_ms}, {"samples_per_s", c.samples_per_s}};
}

Json period_json(const PeriodCheck& p) {
  return Json{{"k", p.k},
              {"jumps", p.jumps},
              {"jumps_on_multiples", p.jumps_on_multiples},
              {"multiples_in_range", p.multiples_in_range},
              {"multiples_with_jump", p.multiples_with_jump},
              {"p_value", p.p_value},
              {"score", p.score}};
}

// The point record's energy fields under their names there, then what the analysis made of them.
Json with_energy(Json point, const PointStats& p) {
  if (!p.energy) return point;
  const PointEnergyStats& e = *p.energy;
  add_energy_fields(point, e);
  point["energy_low_confidence"] = e.low_confidence;
  point["throttled"] = e.throttled;
  return point;
}

Json point_json(const PointStats& p) {
  Json out{{"batch_size", p.batch_size},
              {"samples", p.samples},
              {"median_ms", p.median_ms},
              {"p10_ms", p.p10_ms},
              {"p90_ms", p.p90_ms},
              {"mean_ms", p.mean_ms},
              {"min_ms", p.min_ms},
              {"max_ms", p.max_ms},
              {"cv", optional_json(p.cv)},
              {"median_se_ms", p.median_se_ms},
              {"samples_per_s", p.samples_per_s},
              {"tflops", optional_json(p.tflops)},
              {"peak_memory_bytes", optional_json(p.peak_memory_bytes)},
              {"host_median_ms", optional_json(p.host_median_ms)},
              {"launch_bound", p.launch_bound},
              {"too_few_samples", p.too_few_samples}};
  // Only with repeated passes, so that analyses of single-pass logs keep their keys.
  if (!p.pass_medians.empty()) {
    Json medians = Json::object();
    for (const auto& [pass, ms] : p.pass_medians) medians[std::to_string(pass)] = ms;
    out["pass_medians_ms"] = medians;
    out["between_pass_se_ms"] = optional_json(p.between_pass_se_ms);
  }
  if (p.skipped_steps) out["skipped_steps"] = *p.skipped_steps;  // only with loss scaling
  if (p.chunk) {  // only with chunk: auto, where the batch did not fit whole
    out["chunk"] = *p.chunk;
    out["chunk_largest_fitting"] = optional_json(p.chunk_largest_fitting);
  }
  return out;
}

Json efficient_json(const EnergyChoice& c, bool above_idle) {
  const std::string suffix = above_idle ? "_above_idle" : "";
  return Json{{"batch_size", c.batch_size},
              {"samples_per_j" + suffix, c.samples_per_j},
              {"j_per_sample" + suffix, optional_json(c.j_per_sample)},
              {above_idle ? "avg_power_above_idle_w" : "avg_power_w", optional_json(c.avg_power_w)},
              {"samples_per_s", c.samples_per_s},
              {"median_ms", c.median_ms}};
}

Json group_energy_json(const GroupEnergy& e) {
  Json throttled = Json::array();
  for (const Throttling& t : e.throttled) {
    throttled.push_back(Json{{"batch_size", t.batch_size},
                             {"start_sm_clock_mhz", optional_json(t.start_sm_clock_mhz)},
                             {"end_sm_clock_mhz", optional_json(t.end_sm_clock_mhz)},
                             {"start_temperature_c", optional_json(t.start_temperature_c)},
                             {"end_temperature_c", optional_json(t.end_temperature_c)},
                             {"fell_in_window", t.fell_in_window},
                             {"below_group", t.below_group}});
  }
  return Json{{"methods", e.methods},
              {"scopes", e.scopes},
              {"resolution_ms", optional_json(e.resolution_ms)},
              {"points", e.points},
              {"idle_baseline", e.idle_baseline},
              {"highest_start_sm_clock_mhz", optional_json(e.highest_start_sm_clock_mhz)},
              {"low_confidence", e.low_confidence},
              {"throttled", throttled}};
}

Json jumps_json(const JumpAnalysis& j) {
  Json rises = Json::array(), drops = Json::array(), segments = Json::array();
  for (const Jump& x : j.jumps) rises.push_back(jump_json(x));
  for (const Jump& x : j.drops) drops.push_back(jump_json(x));
  Json fast = Json::array();
  for (const FastSizes& f : j.fast_sizes) {
    Json run{{"first", f.first_batch},     {"last", f.last_batch},     {"fastest_ms", f.fastest_ms},
             {"slowest_ms", f.slowest_ms}, {"before_ms", f.before_ms}, {"after_ms", f.after_ms},
             {"gain_pct", f.gain_pct}};
    if (f.passes > 0) {
      run["passes"] = f.passes;
      run["passes_with"] = f.passes_with;
      run["doubtful"] = f.doubtful;
    }
    fast.push_back(run);
  }
  for (const Segment& s : j.segments) {
    segments.push_back(Json{{"first", s.first_batch},
                            {"last", s.last_batch},
                            {"points", s.points},
                            {"slope_ms_per_sample", s.slope_ms_per_sample},
                            {"rise_ms", s.rise_ms},
                            {"plateau", s.plateau}});
  }
  return Json{{"slope_ms_per_sample", j.slope_ms_per_sample},
              {"noise_ms", j.noise_ms},
              {"tested_pairs", j.tested_pairs},
              {"rises", rises},
              {"drops", drops},
              {"spikes", j.spikes},
              {"fast_sizes", fast},
              {"segments", segments},
              {"staircase", j.staircase}};
}

Json group_json(const GroupAnalysis& g) {
  Json points = Json::array();
  for (const PointStats& p : g.points) points.push_back(with_energy(point_json(p), p));
  Json trend = nullptr;
  if (g.trend) {
    trend = Json{{"intercept_ms", g.trend->intercept_ms},
                 {"slope_ms_per_sample", g.trend->slope_ms_per_sample},
                 {"points", g.trend->points}};
  }
  Json tested = Json::array();
  for (const PeriodCheck& p : g.periodicity.tested) tested.push_back(period_json(p));
  Json after_multiples = Json::array();
  for (const RisesAfterMultiples& r : g.periodicity.after_multiples) {
    Json rises = Json::array();
    for (const auto& [from, rise] : r.rises) rises.push_back(Json{{"from", from}, {"rise_pct", 100 * rise}});
    after_multiples.push_back(Json{{"k", r.k},
                                   {"rises", rises},
                                   {"steps", r.steps},
                                   {"mean_percentile", r.mean_percentile},
                                   {"p_value", r.p_value}});
  }
  Json before = Json::array();
  for (const BatchChoice& c : g.before_jumps) before.push_back(choice_json(c));
  Json group{{"id", g.id},
             {"label", g.label},
             {"identity", g.identity},
             {"logs", g.logs},
             {"run_ids", g.run_ids},
             {"points", points},
             {"trend", trend},
             {"jumps", jumps_json(g.jumps)},
             {"periodicity",
              {{"tested", tested},
               {"best", g.periodicity.best ? period_json(*g.periodicity.best) : Json(nullptr)},
               {"periods_tried", g.periodicity.periods_tried},
               {"periodic", g.periodicity.periodic},
               {"verdict", g.periodicity.verdict},
               {"after_multiples", after_multiples}}},
             {"best",
              {{"fastest", g.fastest ? choice_json(*g.fastest) : Json(nullptr)},
               {"saturation", g.saturation ? choice_json(*g.saturation) : Json(nullptr)},
               {"before_jumps", before},
               {"largest_fitting", optional_json(g.largest_fitting)},
               {"first_oom", optional_json(g.first_oom)},
               {"skipped", g.skipped},
               {"flagged", g.flagged},
               {"launch_bound", g.launch_bound},
               {"overflowed", g.overflowed}}}};
  // Only with chunk: auto's micro-batches, so that analyses of other logs keep their keys.
  if (!g.accumulated.empty()) {
    group["best"]["accumulated"] = g.accumulated;
    group["best"]["largest_whole"] = optional_json(g.largest_whole);
  }
  return group;
}

// Only where the logs measured energy, so that analyses of older logs keep their keys.
Json with_energy(Json group, const GroupAnalysis& g) {
  if (!g.energy) return group;
  Json& best = group["best"];
  best["most_efficient"] =
      g.energy->most_efficient ? efficient_json(*g.energy->most_efficient, false) : Json();
  if (g.energy->idle_baseline) {
    best["most_efficient_above_idle"] = g.energy->most_efficient_above_idle
                                            ? efficient_json(*g.energy->most_efficient_above_idle, true)
                                            : Json();
  }
  group["energy"] = group_energy_json(*g.energy);
  return group;
}

Json energy_ratio_json(const EnergyRatioCurve& e) {
  Json points = Json::array();
  for (const EnergyRatioPoint& p : e.points) {
    Json point{{"batch_size", p.batch_size}, {"ratio", p.ratio}};
    if (p.ratio_above_idle) point["ratio_above_idle"] = *p.ratio_above_idle;
    points.push_back(point);
  }
  auto best = [](const std::optional<EnergyChoice>& c) {
    return c ? Json{{"batch_size", c->batch_size}, {"samples_per_j", c->samples_per_j}} : Json();
  };
  Json j{{"median_ratio", e.median_ratio},
         {"min", {{"ratio", e.min_ratio}, {"batch_size", e.min_at}}},
         {"max", {{"ratio", e.max_ratio}, {"batch_size", e.max_at}}},
         {"points", points},
         {"best", best(e.best)},
         {"baseline_best", best(e.baseline_best)}};
  if (!e.scopes_differ.empty()) j["scopes_differ"] = e.scopes_differ;
  return j;
}

Json comparison_json(const Comparison& c) {
  Json curves = Json::array();
  for (const SpeedupCurve& s : c.curves) {
    Json points = Json::array();
    for (const auto& [batch, speedup] : s.speedup)
      points.push_back(Json{{"batch_size", batch}, {"speedup", speedup}});
    curves.push_back(Json{{"group_id", s.group_id},
                          {"label", s.label},
                          {"median_speedup", s.median_speedup},
                          {"min", {{"speedup", s.min_speedup}, {"batch_size", s.min_at}}},
                          {"max", {{"speedup", s.max_speedup}, {"batch_size", s.max_at}}},
                          {"points", points}});
    // Only where both sides have energy, so that comparisons of older logs keep their keys.
    if (s.energy) curves.back()["energy"] = energy_ratio_json(*s.energy);
  }
  return Json{{"id", c.id},
              {"workload", c.workload},
              {"baseline", {{"id", c.baseline_id}, {"label", c.baseline_label}}},
              {"curves", curves}};
}

Json profile_json(const GroupProfile& p) {
  Json layers = Json::array();
  for (const LayerSeries& l : p.layers) {
    Json ms = Json::object();
    for (const auto& [batch, value] : l.ms) ms[std::to_string(batch)] = value;
    layers.push_back({{"layer", l.layer}, {"pass", l.pass}, {"ms", ms}});
  }
  Json step_ms = Json::object();
  for (const auto& [batch, value] : p.step_ms) step_ms[std::to_string(batch)] = value;
  Json causes = Json::array();
  for (const JumpCause& c : p.causes) {
    Json changes = Json::array();
    for (const LayerChange& l : c.layers) {
      changes.push_back({{"layer", l.layer},       {"pass", l.pass},       {"from_ms", l.from_ms},
                         {"to_ms", l.to_ms},       {"delta_ms", l.delta_ms}, {"share", l.share},
                         {"kernel_switch", l.switched()}, {"appeared", l.appeared}, {"vanished", l.vanished}});
    }
    Json cause = {{"from_batch", c.from_batch},
                  {"to_batch", c.to_batch},
                  {"kind", c.drop ? "drop" : "jump"},
                  {"step_delta_ms", c.step_delta_ms},
                  {"profiled_delta_ms", c.profiled_delta_ms},
                  {"layers", changes},
                  {"summary", c.summary}};
    if (!c.missing.empty()) cause["missing"] = c.missing;
    causes.push_back(std::move(cause));
  }
  return {{"method", p.method}, {"basis", p.basis}, {"batch_sizes", p.batch_sizes},
          {"profiled_step_ms", step_ms}, {"layers", layers}, {"causes", causes}};
}

// [{"batch": b, "tflops": t}, ...] in batch order.
Json rates_by_batch(const std::map<int64_t, double>& by_batch) {
  Json out = Json::array();
  for (const auto& [batch, tflops] : by_batch) out.push_back({{"batch", batch}, {"tflops", tflops}});
  return out;
}

Json layer_rates_json(const LayerRates& r) {
  const std::optional<PeakEntry>& roof = r.roof;
  Json layers = Json::array();
  for (const LayerRate& l : r.layers) {
    Json layer = {{"layer", l.layer}, {"pass", l.pass},     {"gflop", l.gflop},
                  {"ms", l.ms},       {"tflops", l.tflops}, {"layout_ms", l.layout_ms}};
    if (roof) layer["share_of_roof"] = l.tflops / roof->median_tflops;
    if (l.alone_tflops) {
      layer["alone_tflops"] = *l.alone_tflops;
      layer["alone_precision"] = l.alone_precision;
      layer["share_of_alone"] = l.tflops / *l.alone_tflops;
      layer["alone_cudnn_benchmark"] = l.alone_cudnn_benchmark;
      layer["alone_profiled"] = l.alone_profiled;
      if (l.alone_layout_ms) layer["alone_layout_ms"] = *l.alone_layout_ms;
      if (l.searched_tflops) layer["searched_tflops"] = *l.searched_tflops;
    }
    if (!l.alone_by_batch.empty()) layer["alone_by_batch"] = rates_by_batch(l.alone_by_batch);
    layers.push_back(std::move(layer));
  }
  Json out = {{"batch_size", r.batch_size},
              {"gflop", r.gemm_gflop},
              {"ms", r.gemm_ms},
              {"tflops", r.gemm_tflops},
              {"layout_ms", r.layout_ms},
              {"profiled_step_ms", r.step_ms},
              {"layers", layers}};
  if (roof) {
    out["roof"] = {{"operation", roof->operation},  {"precision", roof->precision},
                   {"phase", roof->phase},          {"memory_format", roof->memory_format},
                   {"tflops", roof->median_tflops}, {"from", roof->file + ":" + std::to_string(roof->line)}};
  }
  if (r.alone) {
    out["alone"] = {{"passes", r.alone->passes},
                    {"ms", r.alone->ms},
                    {"step_ms", r.alone->step_ms},
                    {"share", r.alone->ms / r.alone->step_ms},
                    {"from", r.alone->from},
                    {"step_mode", r.alone->step_mode},
                    {"profiled_passes", r.alone->profiled}};
    if (r.alone->layout_passes > 0) {
      out["alone"]["layout_passes"] = r.alone->layout_passes;
      out["alone"]["layout_ms"] = r.alone->layout_ms;
      out["alone"]["step_layout_ms"] = r.alone->step_layout_ms;
    }
    if (const auto all = all_alone_tflops(r)) out["alone"]["tflops"] = *all;
  }
  if (!r.all_alone_by_batch.empty()) out["all_alone_by_batch"] = rates_by_batch(r.all_alone_by_batch);
  return out;
}

Json prediction_json(const Prediction& p) {
  Json jumps = Json::array();
  for (const PredictedJump& j : p.jumps) {
    jumps.push_back({{"from", j.from_batch}, {"to", j.to_batch}, {"step_pct", j.step_pct}, {"layers", j.layers}});
  }
  return {{"sms", p.sms},           {"tiles_from", p.tiles_from},       {"jumps", jumps},
          {"matched", p.matched},   {"precision", p.precision},         {"recall", p.recall},
          {"agreement", p.agreement}, {"predicted_only", p.predicted_only}, {"measured_only", p.measured_only}};
}

// Only where the sweep profiled (and a prediction was made), so that analyses of other logs keep their keys.
Json with_profile(Json group, const GroupAnalysis& g) {
  if (g.profile) group["profile"] = profile_json(*g.profile);
  if (g.layer_rates) group["layer_rates"] = layer_rates_json(*g.layer_rates);
  if (g.prediction) group["prediction"] = prediction_json(*g.prediction);
  if (g.memory) group["memory"] = memory_json(*g.memory);
  if (g.cost) {
    Json points = Json::array();
    for (const PointCost& c : g.cost->points) {
      points.push_back({{"batch_size", c.batch_size},
                        {"usd_per_million_samples", c.usd_per_million_samples},
                        {"usd_per_epoch", optional_json(c.usd_per_epoch)}});
    }
    Json cheapest = nullptr;
    if (g.cost->cheapest) {
      cheapest = {{"batch_size", g.cost->cheapest->batch_size},
                  {"usd_per_million_samples", g.cost->cheapest->usd_per_million_samples},
                  {"usd_per_epoch", optional_json(g.cost->cheapest->usd_per_epoch)}};
    }
    group["cost"] = {{"usd_per_hour", g.cost->usd_per_hour}, {"price_from", g.cost->price_from},
                     {"epoch_samples", optional_json(g.cost->epoch_samples)}, {"points", points},
                     {"cheapest", cheapest}};
  }
  if (g.time_to_accuracy) {
    const GroupTimeToAccuracy& t = *g.time_to_accuracy;
    Json points = Json::array();
    for (const PointTimeToAccuracy& p : t.points) {
      points.push_back({{"batch_size", p.batch_size},
                        {"steps_factor", p.steps_factor},
                        {"relative_time", p.relative_time}});
    }
    group["time_to_accuracy"] = {
        {"b_noise", t.noise.b_noise},
        {"from", t.noise.from},
        {"model", "steps = S_min (1 + b_noise / batch), each of the batch's median step time"},
        {"points", points},
        {"best", t.best ? Json(t.best->batch_size) : Json()}};
  }
  if (g.peak) {
    Json shares = Json::array();
    for (const PeakShare& share : g.peak->shares) {
      Json one = {{"operation", share.operation},
                  {"precision", share.precision},
                  {"peak_tflops", share.peak_tflops},
                  {"share", share.share},
                  {"peak_from", share.from}};
      if (share.operation == "conv") {
        one["memory_format"] = share.memory_format;
        one["phase"] = share.phase;
      }
      shares.push_back(one);
    }
    group["peak"] = {{"batch_size", g.peak->batch_size}, {"tflops", g.peak->tflops}, {"of_peaks", shares}};
  }
  return group;
}

}  // namespace

Json analysis_to_json(const Analysis& analysis, const AnalyzeOptions& options) {
  Json logs = Json::array();
  for (const LogSummary& l : analysis.logs) {
    logs.push_back(Json{{"path", l.path},
                        {"run_ids", l.run_ids},
                        {"records", l.records},
                        {"complete", l.complete},
                        {"truncated_tail", l.truncated_tail},
                        {"warnings", l.warnings}});
    // Only where the end record has it, so that analyses of older logs keep their keys.
    if (l.time_spent) {
      Json spent = {{"total", l.time_spent->total_s}};
      for (const auto& [part, seconds] : l.time_spent->parts) spent[part] = seconds;
      logs.back()["time_spent_s"] = spent;
      logs.back()["stepping_share"] = stepping_share(*l.time_spent);
    }
  }
  Json groups = Json::array(), comparisons = Json::array();
  for (const GroupAnalysis& g : analysis.groups) groups.push_back(with_profile(with_energy(group_json(g), g), g));
  for (const Comparison& c : analysis.comparisons) comparisons.push_back(comparison_json(c));
  Json microbatch = Json::array();
  for (const MicroBatchLog& s : analysis.microbatch) {
    microbatch.push_back(
        Json{{"log", s.log}, {"config", s.config}, {"results", records_json(s.results)}, {"plans", records_json(s.plans)}});
  }
  Json transfer = Json::array();
  for (const TransferVerdict& v : analysis.transfer_verdicts) {
    transfer.push_back({{"copy_timed_group", v.included_group},
                        {"data_on_device_group", v.excluded_group},
                        {"jumps_with_copy", v.with_copy},
                        {"jumps_on_device", v.on_device},
                        {"on_both", v.both},
                        {"below_threshold", v.below_threshold},
                        {"verdict", v.verdict}});
  }
  Json out = Json{{"format_version", 1},
              {"options",
               {{"min_samples", options.min_samples},
                {"z_threshold", options.detector.z_threshold},
                {"min_jump_relative", options.detector.min_relative},
                {"window", options.detector.window},
                {"separate", options.grouping.separate}}},
              {"logs", logs},
              {"groups", groups},
              {"comparisons", comparisons},
              {"microbatch", microbatch},
              {"warnings", analysis.warnings}};
  if (!transfer.empty()) out["transfer_verdicts"] = transfer;
  if (!analysis.unpriced.empty()) out["unpriced_groups"] = analysis.unpriced;
  return out;
}

}  // namespace batchscope
