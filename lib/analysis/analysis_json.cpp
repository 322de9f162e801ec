#include "lib/analysis/analysis_json.h"

namespace batchscope {
namespace {

template <typename T>
Json optional_json(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json jump_json(const Jump& j) {
  return Json{{"from", j.from_batch},
              {"to", j.to_batch},
              {"from_ms", j.from_ms},
              {"to_ms", j.to_ms},
              {"delta_ms", j.delta_ms},
              {"delta_pct", j.delta_pct},
              {"z", j.z},
              {"confidence", j.confidence}};
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

Json point_json(const PointStats& p) {
  return Json{{"batch_size", p.batch_size},
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
              {"too_few_samples", p.too_few_samples}};
}

Json jumps_json(const JumpAnalysis& j) {
  Json rises = Json::array(), drops = Json::array(), segments = Json::array();
  for (const Jump& x : j.jumps) rises.push_back(jump_json(x));
  for (const Jump& x : j.drops) drops.push_back(jump_json(x));
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
              {"segments", segments},
              {"staircase", j.staircase}};
}

Json group_json(const GroupAnalysis& g) {
  Json points = Json::array();
  for (const PointStats& p : g.points) points.push_back(point_json(p));
  Json trend = nullptr;
  if (g.trend) {
    trend = Json{{"intercept_ms", g.trend->intercept_ms},
                 {"slope_ms_per_sample", g.trend->slope_ms_per_sample},
                 {"points", g.trend->points}};
  }
  Json tested = Json::array();
  for (const PeriodCheck& p : g.periodicity.tested) tested.push_back(period_json(p));
  Json before = Json::array();
  for (const BatchChoice& c : g.before_jumps) before.push_back(choice_json(c));
  return Json{{"id", g.id},
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
                {"periodic", g.periodicity.periodic},
                {"verdict", g.periodicity.verdict}}},
              {"best",
               {{"fastest", g.fastest ? choice_json(*g.fastest) : Json(nullptr)},
                {"saturation", g.saturation ? choice_json(*g.saturation) : Json(nullptr)},
                {"before_jumps", before},
                {"largest_fitting", optional_json(g.largest_fitting)},
                {"first_oom", optional_json(g.first_oom)},
                {"skipped", g.skipped},
                {"flagged", g.flagged}}}};
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
  }
  return Json{{"id", c.id},
              {"workload", c.workload},
              {"baseline", {{"id", c.baseline_id}, {"label", c.baseline_label}}},
              {"curves", curves}};
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
  }
  Json groups = Json::array(), comparisons = Json::array();
  for (const GroupAnalysis& g : analysis.groups) groups.push_back(group_json(g));
  for (const Comparison& c : analysis.comparisons) comparisons.push_back(comparison_json(c));
  Json microbatch = Json::array();
  for (const MicroBatchLog& s : analysis.microbatch) {
    microbatch.push_back(
        Json{{"log", s.log}, {"config", s.config}, {"results", s.results}, {"plans", s.plans}});
  }
  return Json{{"format_version", 1},
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
}

}  // namespace batchscope
